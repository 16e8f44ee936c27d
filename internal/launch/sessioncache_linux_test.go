package launch

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// TestSessionWalkCache: a session's commands share one watched walk
// cache for their state directory, whose spared walks Stats counts (after
// Close too); once closed, a command gets an unwatched cache, as without
// a session, and the session keeps no watcher.
func TestSessionWalkCache(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The walk cache trusts a directory 2 s after its last change.
	time.Sleep(2100 * time.Millisecond)
	s := NewSession()
	c := s.walkCache(state)
	if s.walkCache(state) != c {
		t.Fatal("two commands of a session got two walk caches")
	}
	pats := []globscan.Pattern{{Glob: "**/.env"}}
	for range 3 {
		if _, _, err := c.ScanPatterns(root, pats, globscan.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	spared := s.Stats().WalksSpared
	if spared == 0 || c.Stats().Watches == 0 {
		t.Fatalf("stats %+v, cache %+v: no walk spared", s.Stats(), c.Stats())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c.Stats().Watches != 0 {
		t.Error("the session's watcher outlived Close")
	}
	if got := s.Stats().WalksSpared; got != spared {
		t.Errorf("WalksSpared %d after Close, want %d", got, spared)
	}
	after := s.walkCache(state)
	if after == c {
		t.Fatal("a command after Close got the session's cache")
	}
	for range 3 {
		if _, _, err := after.ScanPatterns(root, pats, globscan.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if st := after.Stats(); st.Watches != 0 || st.Reused != 0 {
		t.Errorf("the cache after Close watches: %+v", st)
	}
}
