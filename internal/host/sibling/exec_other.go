//go:build !linux

package sibling

// ExecPath is the path through which the program is executed. Outside
// Linux there is no /proc/self/fd to execute the checked file itself
// through, so it is the program's path: what runs is what the path names
// when it is executed, not necessarily the file that was checked.
func (b *Binary) ExecPath() string {
	return b.Path
}
