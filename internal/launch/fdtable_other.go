//go:build !linux

package launch

// growFDTable does nothing: only Linux waits for an RCU grace period to
// grow a descriptor table.
func growFDTable() {}
