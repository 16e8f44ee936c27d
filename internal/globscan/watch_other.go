//go:build !linux

package globscan

import "errors"

// watcher watches nothing here (Cache.Watch fails).
type watcher struct{}

// DefaultWatches is 0 here: nothing is watched.
func DefaultWatches() int { return 0 }

func newWatcher(int) (*watcher, error) {
	return nil, errors.New("globscan: watching directories works only on Linux")
}

func (*watcher) count() (uint64, bool)        { return 0, false }
func (*watcher) watchTree(string, *node) bool { return false }
func (*watcher) watching() int                { return 0 }
func (*watcher) close()                       {}
func (*watcher) watchPaths([]string) bool     { return false }
func (*watcher) hold()                        {}
func (*watcher) unhold()                      {}
