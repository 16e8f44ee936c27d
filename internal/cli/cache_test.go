package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/sandboxcache"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestCacheCommand: cordon cache lists every sandbox cache with its state
// and workspace; --clean removes those whose workspace is gone or unknown;
// --workspace picks one cache, which --clean then removes.
func TestCacheCommand(t *testing.T) {
	tests := []struct {
		name      string
		workspace string // "live", "gone" or ""
		clean     bool
		wantLeft  []string // caches left after the command
		wantOut   []string
		wantErr   string
	}{
		{"list", "", false, []string{"live", "gone", "unknown"},
			[]string{"present  LIVE", "gone     GONE", "(workspace unknown)", "3 caches", "--clean removes the 2"}, ""},
		{"clean", "", true, []string{"live"},
			[]string{"removed", "gone     GONE", "removed 2 of 3 caches"}, ""},
		{"one workspace", "live", false, []string{"live", "gone", "unknown"}, []string{"present  LIVE", "1 cache,"}, ""},
		{"clean one workspace", "live", true, []string{"gone", "unknown"}, []string{"removed", "removed 1 of 1"}, ""},
		{"clean a gone workspace", "gone", true, []string{"live", "unknown"}, []string{"removed 1 of 1"}, ""},
		{"a workspace without a cache", "nocache", false, []string{"live", "gone", "unknown"}, nil, "no sandbox cache for"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			h := policy.Host{Home: filepath.Join(base, "home"), Cwd: base, XDGCacheHome: filepath.Join(base, "cache")}
			root := policy.SandboxCacheRoot(h)
			ws := map[string]string{"live": filepath.Join(base, "live"), "gone": filepath.Join(base, "gone"), "nocache": filepath.Join(base, "nocache")}
			for _, d := range []string{ws["live"], ws["nocache"]} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			dirs := map[string]string{"unknown": filepath.Join(root, policy.SandboxCacheName("/old"))}
			for _, k := range []string{"live", "gone"} {
				dirs[k] = policy.SandboxCache(h, ws[k])
			}
			for k, d := range dirs {
				if err := os.MkdirAll(filepath.Join(d, "go-build"), 0o700); err != nil {
					t.Fatal(err)
				}
				if k != "unknown" {
					if err := sandboxcache.Record(d, ws[k]); err != nil {
						t.Fatal(err)
					}
				}
			}
			var out bytes.Buffer
			flag := ""
			if tc.workspace != "" {
				flag = ws[tc.workspace]
			}
			err := runCache(&out, h, flag, tc.clean, false)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, w := range tc.wantOut {
				w = strings.NewReplacer("LIVE", ws["live"], "GONE", ws["gone"]).Replace(w)
				if !strings.Contains(text, w) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
			for k, d := range dirs {
				_, err := os.Stat(d)
				if left := err == nil; left != contains(tc.wantLeft, k) {
					t.Errorf("cache of %s left = %v, want %v\n%s", k, left, !left, text)
				}
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestCacheJSON: --json prints one object, the caches' directory and the
// caches ([] when none).
func TestCacheJSON(t *testing.T) {
	base := t.TempDir()
	h := policy.Host{Home: base, Cwd: base, XDGCacheHome: filepath.Join(base, "cache")}
	var out bytes.Buffer
	if err := runCache(&out, h, "", false, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"caches": []`) {
		t.Errorf("no caches: %q, want \"caches\": []", out.String())
	}
	d := policy.SandboxCache(h, base)
	if err := os.MkdirAll(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := sandboxcache.Record(d, base); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runCache(&out, h, "", false, true); err != nil {
		t.Fatal(err)
	}
	var doc cacheJSON
	err := json.Unmarshal(out.Bytes(), &doc)
	got := doc.Caches
	if err != nil || doc.Root == "" || len(got) != 1 || got[0].Workspace != base || got[0].State != sandboxcache.Present {
		t.Errorf("JSON %s: %+v, %v", out.String(), got, err)
	}
}
