package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// TestDenyGlobsInReadRoots: both backends search the read paths for the
// relative deny globs (policy.Policy.DenyGlobReadRoots): a match at depth
// in a read directory, a read path that is a denied file or a link to one,
// but not a tool cache inside a read directory; bwrap masks them, the
// Landlock backend denies them, and says so when a read path's walk does
// not finish.
func TestDenyGlobsInReadRoots(t *testing.T) {
	p, opts := testPolicy(t)
	home := opts.Home
	files := []string{"d/sub/deep/.env", "d/sub/deep/secrets.json", "d/plain.txt", ".env", "control.txt", "vault/.env", "go/pkg/mod/example.com/m@v1/secrets.go"}
	for _, f := range files {
		full := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(home, "settings")
	if err := os.Symlink(filepath.Join(home, "vault", ".env"), link); err != nil {
		t.Fatal(err)
	}
	h := func(rel string) string { return filepath.Join(home, rel) }
	p.Read = append(p.Read, h("d"), h(".env"), h("control.txt"), link, h("go"))
	wantDenied := []string{h("d/sub/deep/.env"), h("d/sub/deep/secrets.json"), h(".env"), link}
	wantOpen := []string{h("d/plain.txt"), h("control.txt"), h("go/pkg/mod/example.com/m@v1/secrets.go")}
	// ~/go holds the tool cache ~/go/pkg/mod: searched around it.

	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	mask := filepath.Join(opts.StateDir, maskFile)
	for _, d := range wantDenied {
		if !hasSeq(pl.Argv, "--ro-bind", mask, d) {
			t.Errorf("bwrap: %s is not masked:\n%s", d, strings.Join(pl.Argv, " "))
		}
	}
	for _, o := range wantOpen {
		if hasSeq(pl.Argv, "--ro-bind", mask, o) {
			t.Errorf("bwrap: %s is masked", o)
		}
	}
	if !slices.ContainsFunc(pl.Notes, func(n string) bool {
		return strings.Contains(n, "are searched in ") && strings.Contains(n, " "+h("d")+" ")
	}) {
		t.Errorf("bwrap: no note says %s is searched: %q", h("d"), pl.Notes)
	}

	lpl := &Plan{}
	denied, _ := expandDenied(lpl, p, home, globscan.Limits{})
	for _, d := range wantDenied {
		if !slices.Contains(denied, d) {
			t.Errorf("landlock: %s is not denied: %q", d, denied)
		}
	}
	for _, o := range wantOpen {
		if slices.Contains(denied, o) {
			t.Errorf("landlock: %s is denied", o)
		}
	}
	// A read path whose walk goes over the bound is denied whole, and
	// the run says so.
	for i := range 40 {
		if err := os.WriteFile(filepath.Join(h("d"), "f"+strings.Repeat("x", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lpl = &Plan{}
	denied, _ = expandDenied(lpl, p, home, globscan.Limits{MaxEntries: 30})
	if !slices.Contains(denied, h("d")) || !slices.ContainsFunc(lpl.RunNotes, func(n string) bool { return strings.HasPrefix(n, h("d")+" is not readable in this run") }) {
		t.Errorf("landlock: a read path whose walk failed: denied %q, notes %q", denied, lpl.RunNotes)
	}
}
