//go:build !linux

package landlock

// ABI returns 0: Landlock exists only on Linux.
func ABI() (int, error) { return 0, nil }

// Apply enforces nothing outside Linux; it returns a Report with ABI 0 and
// a Degraded line when r asks for anything.
func Apply(r Rules) (Report, error) {
	var rep Report
	if r.FS() || r.Net() || r.ScopeSignals || r.ScopeAbstractUnix || r.RestrictUnix {
		rep.Degraded = []string{"Landlock unavailable on this system: file-system, TCP and IPC rules not enforced by Landlock"}
	}
	return rep, nil
}
