package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestBwrapArgvExact: with the host's facts given (a bwrap that does not
// exist, the backend), the bwrap plan of a small policy is exactly this
// argv; and Build made nothing on the host: no state directory, no
// sandbox cache, only preparations for the launcher.
func TestBwrapArgvExact(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	cache := filepath.Join(home, ".cache", "cordon", "sandbox", "abc")
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Read: []string{ws}, Write: []string{ws, cache},
		SandboxCache: cache, Network: policy.Network{Mode: policy.NetDeny}, Protected: []string{"**/.git", "**/.vscode/", "**/.envrc"}}
	opts := Options{Home: home, Cwd: ws, StateDir: state, Host: fakeHost(),
		Getenv: func(string) (string, bool) { return "", false }}
	for _, b := range []backend.Name{backend.Auto, backend.Bwrap} {
		p.Backend = b
		pl, err := Build(p, []string{"make", "test"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{fakeBwrap,
			"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
			"--die-with-parent", "--cap-drop", "ALL", "--hostname", "cordon", "--unshare-net", "--new-session",
			"--proc", "/proc", "--dev", "/dev",
			"--tmpfs", "/tmp",
			"--tmpfs", "/dev/shm",
			"--ro-bind-fd", "3", helperspec.HelperPath,
			"--tmpfs", home,
			"--bind", ws, ws,
			"--ro-bind", filepath.Join(state, emptyDir), filepath.Join(ws, ".git"),
			"--ro-bind", filepath.Join(state, emptyDir), filepath.Join(ws, ".vscode"),
			"--bind", cache, cache, // made by the launcher (Plan.Prepare)
			"--remount-ro", "/tmp",
			"--remount-ro", home,
			"--chdir", ws, "--", helperspec.HelperPath, helperspec.HelperCommand, "--", "make", "test"}
		if !slices.Equal(pl.Argv, want) {
			t.Errorf("backend %s: argv\n%s\nwant\n%s", b, strings.Join(pl.Argv, " "), strings.Join(want, " "))
		}
		for _, d := range []string{state, cache, filepath.Dir(cache)} {
			if _, err := os.Lstat(d); err == nil {
				t.Errorf("Build created %s", d)
			}
		}
		if len(pl.Prepare) == 0 || pl.Prepare[0] != (Preparation{Kind: PrepDir, Path: cache, Mode: 0o700}) {
			t.Errorf("preparations %+v do not start with the sandbox cache", pl.Prepare)
		}
	}
}

// TestBuildLooksAtNoHostFacts: Build takes the host's facts from
// Options.Host only: package plan imports neither probe (which finds
// bwrap, tries user namespaces, runs bwrap) nor sandboxcache, and calls
// nothing that writes, starts a process or asks the kernel what it
// supports. So its tests need no bwrap, and none of them can touch one.
func TestBuildLooksAtNoHostFacts(t *testing.T) {
	forbidden := map[string]bool{
		"os.Mkdir": true, "os.MkdirAll": true, "os.WriteFile": true, "os.OpenFile": true, "os.Create": true,
		"os.Symlink": true, "os.Link": true, "os.Rename": true, "os.Remove": true, "os.RemoveAll": true,
		"os.Chmod": true, "os.Chtimes": true, "os.OpenRoot": true, "os.Executable": true,
		"exec.Command": true, "exec.CommandContext": true, "landlock.ABI": true, "unix.Syscall": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasSuffix(path, "/cordon/probe") || strings.HasSuffix(path, "/cordon/sandboxcache") {
				t.Errorf("%s imports %s: host facts come in Options.Host", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && forbidden[x.Name+"."+sel.Sel.Name] {
				t.Errorf("%s: %s.%s: Build must only compute (effects go into Plan.Prepare, host facts into Options.Host)", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
			}
			return true
		})
	}
}
