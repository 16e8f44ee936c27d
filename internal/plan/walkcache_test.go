package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestBuildWithWalkCache: a plan built with the walk cache of earlier
// builds (Options.WalkCache) is the plan built without one, on both
// backends: after nothing changed (the walks then come from the cache),
// and after a .env was made in a directory whose mtime was then set back
// (the directory's ctime still changed: the .env is masked on bwrap, and
// among the supervisor's denied paths on the Landlock-only backend).
func TestBuildWithWalkCache(t *testing.T) {
	type setup struct {
		b    backend.Name
		p    *policy.Policy
		opts Options
	}
	var setups []setup
	for _, b := range []backend.Name{backend.Bwrap, backend.Landlock} {
		p, opts := testPolicy(t)
		p.Backend = b
		opts.Host.LandlockABI = 6
		// Enough directories to be cached (globscan.MinCacheDirs).
		for i := range globscan.MinCacheDirs {
			if err := os.MkdirAll(filepath.Join(p.Workspace, "pkg", fmt.Sprint(i)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		setups = append(setups, setup{b, p, opts})
	}
	// The walk cache trusts only directories whose ctime is older than
	// its racy window (2 s) when they are read.
	time.Sleep(2100 * time.Millisecond)
	for _, s := range setups {
		build := func(t *testing.T, cached bool) (*Plan, globscan.CacheStats) {
			t.Helper()
			o := s.opts
			if cached {
				o.WalkCache = globscan.OpenCache(filepath.Join(o.StateDir, "walk"))
			}
			pl, err := Build(s.p, []string{"true"}, o)
			if err != nil {
				t.Fatal(err)
			}
			st := o.WalkCache.Stats()
			if err := o.WalkCache.Save(); err != nil {
				t.Fatal(err)
			}
			return pl, st
		}
		same := func(t *testing.T, got, want *Plan) {
			t.Helper()
			if s.b == backend.Bwrap && !slices.Equal(got.Argv, want.Argv) {
				t.Errorf("argv with the cache:\n%s\nwithout:\n%s", strings.Join(got.Argv, " "), strings.Join(want.Argv, " "))
			}
			if !slices.Equal(got.Degraded, want.Degraded) || !slices.Equal(got.Guard.GitDirs, want.Guard.GitDirs) || !slices.Equal(got.Guard.Names, want.Guard.Names) {
				t.Errorf("with the cache: degraded %q guard %+v; without: %q %+v", got.Degraded, got.Guard, want.Degraded, want.Guard)
			}
		}
		t.Run(string(s.b)+"/unchanged", func(t *testing.T) {
			// The first build records the tree; the next takes it from
			// the cache.
			build(t, true)
			got, st := build(t, true)
			if st.Loaded == 0 {
				t.Errorf("the cache was not used: %+v", st)
			}
			want, _ := build(t, false)
			same(t, got, want)
		})
		t.Run(string(s.b)+"/.env made, mtime set back", func(t *testing.T) {
			sub := filepath.Join(s.p.Workspace, "sub")
			fi, err := os.Stat(sub)
			if err != nil {
				t.Fatal(err)
			}
			env := filepath.Join(sub, ".env")
			if err := os.WriteFile(env, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(sub, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			got, _ := build(t, true)
			want, _ := build(t, false)
			same(t, got, want)
			switch s.b {
			case backend.Bwrap:
				if mask := filepath.Join(s.opts.StateDir, maskFile); !hasSeq(got.Argv, "--ro-bind", mask, env) {
					t.Errorf("%s is not masked:\n%s", env, strings.Join(got.Argv, " "))
				}
			default:
				if got.Supervise == nil || !slices.Contains(got.Supervise.denied, env) {
					t.Errorf("%s is not among the supervisor's denied paths", env)
				}
			}
		})
	}
}
