package launch

import (
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// WalkCache is the cache of the walks for deny globs, protected paths and
// planted files (see globscan.Cache) in cordon's state directory
// stateDir, which no sandbox can read or write; nil without one.
func WalkCache(stateDir string) *globscan.Cache {
	if stateDir == "" {
		return nil
	}
	return globscan.OpenCache(filepath.Join(stateDir, "walk"))
}
