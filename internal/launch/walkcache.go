package launch

import (
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/walkserver"
)

// WalkCache is the cache of the walks for deny globs, protected paths and
// planted files (see globscan.Cache) in cordon's state directory
// stateDir, which no sandbox can read or write; nil without one. When a
// walk server runs for it (see walkserver), the cache hands it its scans,
// unless $CORDON_NO_WALK_SERVER is set.
func WalkCache(stateDir string) *globscan.Cache {
	if stateDir == "" {
		return nil
	}
	dir := filepath.Join(stateDir, "walk")
	c := globscan.OpenCache(dir)
	if r := dialWalkServer(stateDir); r != nil {
		c.UseRemote(r)
	}
	return c
}

// noWalkServer reports whether $CORDON_NO_WALK_SERVER turns the walk
// server off: no run starts or asks one.
func noWalkServer() bool { return os.Getenv("CORDON_NO_WALK_SERVER") != "" }

// dialWalkServer is a client of the walk server of stateDir, or nil when
// none runs or it is turned off.
func dialWalkServer(stateDir string) *walkserver.Client {
	if stateDir == "" || noWalkServer() {
		return nil
	}
	return walkserver.Dial(filepath.Join(stateDir, "walk"))
}

// WalkServerArg is the hidden argument of cordon that runs the walk
// server of the walk cache directory after it (see StartWalkServer).
// (Short: cobra pads every command's name in cordon --help to the longest,
// hidden ones included.)
const WalkServerArg = "__walk"

// StartWalkServer starts a walk server for the walk cache c of the state
// directory stateDir after a one-shot run, when its walks read at least
// walkserver.StartFrom directories themselves (none was answered by a
// server, and none declined them: one that runs on and does not watch
// the tree): the next runs' walks then cost no lstat per directory. exe is
// cordon's binary, run as `exe __walk DIR`. It says nothing when
// it cannot: the runs walk as before.
func StartWalkServer(c *globscan.Cache, stateDir, exe string) {
	if c == nil || stateDir == "" || exe == "" || noWalkServer() {
		return
	}
	if st := c.Stats(); st.Remote > 0 || st.RemoteDeclined > 0 || st.Walked < walkserver.StartFrom {
		return
	}
	dir := filepath.Join(stateDir, "walk")
	_ = walkserver.Start(dir, exe, WalkServerArg, dir)
}
