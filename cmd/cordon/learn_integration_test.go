//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// docsLearnExample returns the shell block of docs/violations.md that
// shows cordon learn and the cordon run after it.
func docsLearnExample(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "violations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(block[1], "cordon learn ") && strings.Contains(block[1], "cordon run --config") {
			return block[1]
		}
	}
	t.Fatal("docs/violations.md has no sh block with cordon learn and cordon run --config")
	return ""
}

// TestLearnDocsExample: the learn example of docs/violations.md, run
// verbatim by sh in a Go project whose go.mod replaces a module with one
// beside the workspace, works: the learnt policy allows reading the module
// and leaves Go's telemetry out (a comment, never a rule), and the same
// build under it runs with nothing denied but what the file lists as left
// out (it, below it, or a directory made to hold it).
func TestLearnDocsExample(t *testing.T) {
	t.Parallel()
	script := docsLearnExample(t)
	e := newEnv(t)
	goBin := requireGo(t)
	seedGoCache(t, e)
	lib := filepath.Join(e.home, "src", "lib")
	writeFile(t, filepath.Join(lib, "go.mod"), "module example.com/lib\n\ngo 1.22\n")
	writeFile(t, filepath.Join(lib, "lib.go"), "package lib\n\nfunc Hello() string { return \"hello\" }\n")
	writeFile(t, filepath.Join(e.ws, "go.mod"), "module example.com/proj\n\ngo 1.22\n\nrequire example.com/lib v0.0.0\n\nreplace example.com/lib => ../lib\n")
	writeFile(t, filepath.Join(e.ws, "main.go"), "package main\n\nimport \"example.com/lib\"\n\nfunc main() { println(lib.Hello()) }\n")
	e.extra = append(e.extra, "PATH="+filepath.Dir(cordonBin)+":"+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin")

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "")
	cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-e", "-c", script}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the docs' example:\n%s\nfailed: %v\n%s", script, err, out)
	}
	file := filepath.Join(e.home, ".config", "cordon", "build.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the example wrote no policy where it says: %v", err)
	}
	y := string(data)
	if !strings.Contains(y, `read: ["~/src/lib"]`) {
		t.Errorf("the learnt policy does not let the build read the module beside the workspace:\n%s", y)
	}
	for _, l := range strings.Split(y, "\n") {
		if !strings.HasPrefix(l, "#") && strings.Contains(l, ".config/go") {
			t.Errorf("the learnt policy allows Go's own config or telemetry: %q\n%s", l, y)
		}
	}

	// The same build again under the learnt policy, watched.
	r := e.runTimeout(3*time.Minute, nil, "test", "--config", file, "--", "go", "build", "./...")
	if r.code != 0 {
		t.Fatalf("go build under the learnt policy:\n%s\n%s", y, r)
	}
	for _, l := range unlistedDenials(y, r.stderr) {
		t.Errorf("denied under the learnt policy, and not listed in it as left out: %s\npolicy:\n%s", l, y)
	}
}

// unlistedDenials returns the lines of cordon test's report (stderr) that
// name a denial the learnt policy y does not list in its comments: as a
// path left denied, or in a directory left out (it, below it, or a
// directory made to hold it).
func unlistedDenials(y, stderr string) []string {
	var paths, leftOut []string
	for _, l := range strings.Split(y, "\n") {
		if p, ok := strings.CutPrefix(l, "#     "); ok {
			paths = append(paths, p)
		}
		if dir, _, ok := strings.Cut(strings.TrimPrefix(l, "#   "), ": "); ok && strings.HasPrefix(l, "#   ~/") {
			leftOut = append(leftOut, dir)
		}
	}
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.HasPrefix(l, "  file-") && !strings.HasPrefix(l, "  network-") {
			continue
		}
		p := strings.Fields(l)[1]
		listed := slices.Contains(paths, p)
		for _, dir := range leftOut {
			listed = listed || p == dir || strings.HasPrefix(p, dir+"/") || strings.HasPrefix(dir, p+"/") && p != "~"
		}
		if !listed {
			out = append(out, l)
		}
	}
	return out
}

// TestLearnOutputInsideWorkspace: cordon learn whose output goes to a file
// inside the workspace (where cordon run refuses a --config that allows
// more) says so in one line; to a file outside, it says nothing of it.
func TestLearnOutputInsideWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mkdir(t, filepath.Join(e.home, ".config", "cordon"))
	for _, tc := range []struct {
		out  string
		warn bool
	}{
		{"build.yaml", true},
		{"sub/../build2.yaml", true},
		{"~/.config/cordon/build.yaml", false},
	} {
		cmd := e.command(t.Context(), "")
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", `mkdir -p sub && "$0" learn -- true > ` + tc.out, cordonBin}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("cordon learn -- true > %s: %v\n%s", tc.out, err, out)
		}
		n := strings.Count(string(out), "cordon: warning: the learnt policy went to ")
		if tc.warn && (n != 1 || !strings.Contains(string(out), "inside the workspace, where cordon run refuses a --config file that allows more: move it out, e.g. into ~/.config/cordon/\n")) ||
			!tc.warn && n != 0 {
			t.Errorf("cordon learn -- true > %s: want a warning: %v, got:\n%s", tc.out, tc.warn, out)
		}
	}
}

// TestLearnNothingNeeded: a command the profile already allows gets a
// learnt policy that says there is nothing to add, with no bare
// "sandbox:" that reads as if something were (found by using cordon),
// and the file still loads as a --config.
func TestLearnNothingNeeded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run("learn", "--", "true")
	if r.code != 0 {
		t.Fatalf("cordon learn -- true: %s", r)
	}
	if !strings.Contains(r.stdout, "needed nothing beyond the development profile") || strings.Contains(r.stdout, "sandbox:") {
		t.Fatalf("want a policy saying there is nothing to add, got:\n%s", r.stdout)
	}
	cfg := filepath.Join(e.root, "learnt.yaml")
	writeFile(t, cfg, r.stdout)
	if r := e.run("run", "--config", cfg, "--", "true"); r.code != 0 {
		t.Fatalf("the learnt file does not load as a --config: %s", r)
	}
}
