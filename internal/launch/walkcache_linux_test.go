package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/walkserver"
)

// refusingRemote is a walk server that cannot answer: declined says
// whether it runs on and declines the tree, or none answered.
type refusingRemote struct{ declined bool }

func (r refusingRemote) Scan(string, []globscan.Pattern, globscan.Limits, []string) (globscan.RemoteScan, bool) {
	return globscan.RemoteScan{Declined: r.declined}, false
}

// TestStartWalkServerDeclined: after a run that walked a large tree
// itself, a walk server is started, unless one runs on and declined the
// tree (it does not keep it watched): another would find it holding the
// directory and exit, a process started for nothing after every run.
func TestStartWalkServerDeclined(t *testing.T) {
	root := t.TempDir()
	for i := range walkserver.StartFrom {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprint(i/50), fmt.Sprint(i%50)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		declined bool
		started  bool
	}{{"no server answered", false, true}, {"a server declined", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CORDON_NO_WALK_SERVER", "")
			state := t.TempDir()
			marker := filepath.Join(state, "started")
			exe := filepath.Join(state, "fake-cordon")
			if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"$@\" > "+marker+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			c := globscan.OpenCache(filepath.Join(state, "walk"))
			c.UseRemote(refusingRemote{tc.declined})
			pats := []globscan.Pattern{{Glob: "**/.env"}}
			if _, _, err := c.ScanPatterns(root, pats, globscan.Limits{}); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.Walked < walkserver.StartFrom {
				t.Fatalf("the scan walked %d directories, want at least %d", st.Walked, walkserver.StartFrom)
			}
			StartWalkServer(c, state, exe)
			var started bool
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(marker); err == nil {
					started = true
					break
				}
				if !tc.started && time.Now().After(deadline.Add(-4500*time.Millisecond)) {
					break // 500 ms for a start that must not come
				}
			}
			if started != tc.started {
				t.Errorf("a walk server started: %v, want %v", started, tc.started)
			}
		})
	}
}
