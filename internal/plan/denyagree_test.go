//go:build unix

package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/workspace"
)

// TestDenyEnginesAgree runs the same (deny entry, path, hidden) cases
// through the three places a deny entry is applied: the bwrap plan's
// masks, the Landlock plan's denied paths (expandDenied) and the MCP file
// tools' check (workspace.FS, through policy.DenyRule). They must agree.
// The absolute globs with "**" and braces are the cases where the backends
// (filepath.Glob: "**" is "*", no braces) once hid less than the file tools
// (doublestar); the stricter reading, doublestar's, is now everyone's.
func TestDenyEnginesAgree(t *testing.T) {
	p, opts := testPolicy(t)
	ws := p.Workspace
	for _, f := range []string{"a/.env", "notes.txt", "cfg/x.json", "cfg/sub/y.json", "build/token.json", "build/x/token.json",
		"keys/id.pem", "keys/id.pub", "data/b/c", "sec/deep/file", "src/main.go"} {
		full := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type probe struct {
		path   string // relative to the workspace
		hidden bool
	}
	for _, tc := range []struct {
		deny   string
		probes []probe
	}{
		{"**/.env", []probe{{"a/.env", true}, {"notes.txt", false}}},
		{"cfg/*.json", []probe{{"cfg/x.json", true}, {"cfg/sub/y.json", false}}},
		{"build/**/token.json", []probe{{"build/token.json", true}, {"build/x/token.json", true}, {"src/main.go", false}}},
		{"keys/*.{pem,key}", []probe{{"keys/id.pem", true}, {"keys/id.pub", false}}},
		{"sec", []probe{{"sec", true}, {"sec/deep/file", true}, {"a/.env", false}}},
		{"n?tes.txt", []probe{{"notes.txt", true}}},
		{"**/deep", []probe{{"sec/deep/file", true}, {"sec", false}}},
		{ws + "/keys/*.pem", []probe{{"keys/id.pem", true}, {"keys/id.pub", false}}},
		{ws + "/**/token.json", []probe{{"build/token.json", true}, {"build/x/token.json", true}, {"notes.txt", false}}},
		{ws + "/cfg/{x,z}.json", []probe{{"cfg/x.json", true}, {"cfg/sub/y.json", false}}},
		{ws + "/data/**", []probe{{"data", true}, {"data/b/c", true}, {"src", false}}},
		{ws + "/sec", []probe{{"sec/deep/file", true}, {"notes.txt", false}}},
	} {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(tc.deny, ws), "/", "_"), func(t *testing.T) {
			p.Deny = []string{tc.deny}
			pl, err := Build(p, []string{"true"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			var masked []string
			for i := 0; i+2 < len(pl.Argv); i++ {
				if pl.Argv[i] == "--ro-bind" && (pl.Argv[i+1] == filepath.Join(opts.StateDir, maskFile) || pl.Argv[i+1] == filepath.Join(opts.StateDir, maskDir)) {
					masked = append(masked, pl.Argv[i+2])
				}
			}
			denied, _ := expandDenied(&Plan{}, p, opts.Home, globscan.Limits{})
			fsys, err := workspace.New(p)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			for _, pr := range tc.probes {
				abs := filepath.Join(ws, pr.path)
				_, err := fsys.Info(pr.path)
				var v *workspace.Violation
				tools := errors.As(err, &v) && v.Kind == workspace.KindDenied
				if err != nil && !tools {
					t.Fatalf("file tools: %s: %v", pr.path, err)
				}
				got := map[string]bool{
					"bwrap":      policy.CoveredBy(abs, masked),
					"landlock":   policy.CoveredBy(abs, denied),
					"file tools": tools,
				}
				for who, hidden := range got {
					if hidden != pr.hidden {
						t.Errorf("%s: %s hidden = %v, want %v (bwrap masks %q; landlock denies %q)", who, pr.path, hidden, pr.hidden, masked, denied)
					}
				}
			}
		})
	}
}
