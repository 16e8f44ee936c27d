package helper

import (
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of cordon's module.
const module = "github.com/cordon-sandbox/cordon/"

// TestStageDependencies checks that the in-sandbox stage depends only on
// its contract (helperspec) and the enforcers (landlock, seccomp, and the
// path predicate subpath, a leaf), and the contract only on the enforcers
// whose rules it carries: never on the
// planner, the policy, config, probe, globscan or limits. Every import of
// every non-test file counts, whatever its build constraints.
func TestStageDependencies(t *testing.T) {
	for _, tc := range []struct {
		pkg     string
		allowed []string
	}{
		{"internal/helper", []string{"internal/helperspec", "internal/enforce/landlock", "internal/enforce/seccomp", "internal/subpath"}},
		{"internal/helperspec", []string{"internal/enforce/landlock", "internal/enforce/seccomp", "internal/subpath"}},
		{"internal/enforce/landlock", []string{"internal/subpath"}},
		{"internal/enforce/seccomp", nil},
		{"internal/subpath", nil},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			deps := map[string]bool{}
			if err := cordonDeps(tc.pkg, deps); err != nil {
				t.Fatal(err)
			}
			for _, d := range slices.Sorted(maps.Keys(deps)) {
				if !slices.Contains(tc.allowed, d) {
					t.Errorf("%s depends on cordon's %s; it may depend only on %q", tc.pkg, d, tc.allowed)
				}
			}
		})
	}
}

// cordonDeps adds to deps the cordon packages that the package in the
// directory dir (relative to the module's root) imports, directly or not.
func cordonDeps(dir string, deps map[string]bool) error {
	files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return os.ErrNotExist
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range af.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			sub, ok := strings.CutPrefix(path, module)
			if !ok || deps[sub] {
				continue
			}
			deps[sub] = true
			if err := cordonDeps(sub, deps); err != nil {
				return err
			}
		}
	}
	return nil
}
