//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProgramOutsideNamed: a program on the PATH in a directory the
// sandbox hides is named with the flag that shows it, in one cordon line:
// run directly or as a shell's first word, not found inside (~/go/bin
// under bubblewrap: exit 127) or not executable there (the Landlock-only
// backend: exit 126); and a program that a hidden PATH entry shadows
// outside (python3 in ~/tools/bin before /usr/bin) is one note before the
// run naming both. A program in a denied directory is never suggested.
func TestProgramOutsideNamed(t *testing.T) {
	t.Parallel()
	requireTool(t, "python3")
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			if be == "landlock" {
				requireLandlock(t)
			}
			e := newEnv(t)
			for _, p := range []string{"go/bin/stringer", "tools/bin/python3", ".ssh/bin/sshtool"} {
				writeFile(t, filepath.Join(e.home, p), "#!/bin/sh\necho OUTSIDE-RAN\n")
				if err := os.Chmod(filepath.Join(e.home, p), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			e.extra = []string{"PATH=" + strings.Join([]string{filepath.Join(e.home, "go/bin"), filepath.Join(e.home, "tools/bin"), filepath.Join(e.home, ".ssh/bin"), "/usr/local/bin:/usr/bin:/bin"}, ":")}
			code := 127
			line := "cordon: stringer was not found inside; it is " + filepath.Join(e.home, "go/bin/stringer") + " outside: --allow-read ~/go/bin"
			if be == "landlock" {
				code = 126
				line = "cordon: stringer is " + filepath.Join(e.home, "go/bin/stringer") + ", which this run may not execute: --allow-read ~/go/bin"
			}
			for _, cmd := range [][]string{{"stringer"}, {"sh", "-c", "stringer -type=Pill"}} {
				r := e.run(append([]string{"run", "--backend", be, "--"}, cmd...)...)
				if r.code != code || strings.Count(r.stderr, line) != 1 || len(cordonLines(r.stderr)) != 1 {
					t.Errorf("%q: want exit %d and the one line %q:\n%s", cmd, code, line, r)
				}
			}
			note := "cordon: note: python3 is " + filepath.Join(e.home, "tools/bin/python3") + " outside but /usr/bin/python3 inside, where ~/tools/bin is not visible: --allow-read ~/tools/bin runs the same program"
			r := e.run("run", "--backend", be, "--", "python3", "-c", "print('INSIDE-RAN')")
			if r.code != 0 || !strings.Contains(r.stdout, "INSIDE-RAN") || strings.Count(r.stderr, note) != 1 || len(cordonLines(r.stderr)) != 1 {
				t.Errorf("python3 shadowed outside: want it to run and the one note %q:\n%s", note, r)
			}
			r = e.run("run", "--backend", be, "--", "sshtool")
			if r.code == 0 || strings.Contains(r.stderr, "--allow-read") || strings.Contains(r.stderr, ".ssh") {
				t.Errorf("a program in a denied directory is named or suggested:\n%s", r)
			}
		})
	}
}
