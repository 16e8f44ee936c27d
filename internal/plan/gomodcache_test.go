package plan

import (
	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/policy"
	"path/filepath"
	"slices"
	"testing"
)

// TestSeedGoModulesPlanned: on the bwrap backend the plan has the launcher
// link the workspace's modules from the host's module cache into the
// sandbox's (launch's TestSeedGoModules does it), unless go.sum is denied;
// a Landlock-only plan has it remove the links (they would dangle there).
func TestSeedGoModulesPlanned(t *testing.T) {
	p, opts, cache, _, hostMod := goPolicy(t)
	// Seeded into bwrap's module cache, beside the sandbox cache, from a
	// go.sum read in the workspace (through an os.Root by the launcher).
	seed := Preparation{Kind: PrepSeedGoModules, Path: policy.GoModCacheDir(cache), Workspace: p.Workspace, GoSum: "go.sum", From: hostMod}
	unseed := Preparation{Kind: PrepUnseedGoModules, Path: cache}
	pl, err := Build(p, []string{"go", "build"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pl.Prepare, seed) || slices.Contains(pl.Prepare, unseed) {
		t.Errorf("bwrap plan's preparations %+v, want %+v", pl.Prepare, seed)
	}
	q := *p
	q.Deny = append(slices.Clone(p.Deny), filepath.Join(p.Workspace, "go.sum"))
	if pl, err = Build(&q, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(pl.Prepare, func(pr Preparation) bool { return pr.Kind == PrepSeedGoModules }) {
		t.Errorf("a denied go.sum is seeded from: %+v", pl.Prepare)
	}
	q = *p
	q.Backend = backend.Landlock
	if pl, err = Build(&q, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pl.Prepare, unseed) || slices.Contains(pl.Prepare, seed) {
		t.Errorf("Landlock-only plan's preparations %+v, want %+v", pl.Prepare, unseed)
	}
}
