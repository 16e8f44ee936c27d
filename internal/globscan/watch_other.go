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

func (*watcher) count() (uint64, bool)    { return 0, false }
func (*watcher) begin() uint64            { return 0 }
func (*watcher) vouch(*node, uint64) bool { return false }
func (*watcher) vouchNames(_ *node, _ uint64, b []string) ([]string, bool) {
	return b, false
}
func (*watcher) watchDirs([]watchCand, string) (bool, bool) { return false, true }
func (*watcher) watching() int                              { return 0 }
func (*watcher) close()                                     {}
func (*watcher) watchPaths([]string) bool                   { return false }
func (*watcher) changes() (uint64, bool)                    { return 0, false }
func (*watcher) hold()                                      {}
func (*watcher) unhold()                                    {}

// watchInfo: no watches here.
type watchInfo struct{}

// onlyIgnored is false here: nothing is watched.
func (c *Cache) onlyIgnored(string, string, uint64, []string) bool { return false }
