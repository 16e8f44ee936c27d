package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// caseSetup is where a case runs other than the empty workspace: its
// directory and environment, and what to do (untimed) before each run;
// baseline runs the -baseline binary.
type caseSetup struct {
	name     string
	dir      string
	env      []string
	before   func() error
	baseline bool
}

// bigCases makes a workspace of files files, perDir in each directory,
// under tmp and returns the two
// cases run there: "cordon 100k", whose runs share the walk cache of the
// runs before (the second and later runs of a workspace), and "cordon 100k
// 1st", whose walk cache (in a state directory of its own) is removed
// before each run (the first run); with a baseline binary, also that
// binary in the empty workspace ws and in the large one, later runs and
// first.
func bigCases(tmp, home, ws string, env []string, files, perDir int, baseline string, repo bool) ([]caseSetup, error) {
	big := filepath.Join(tmp, "ws-big")
	dirs, err := makeWorkspace(big, files, perDir)
	if err != nil {
		return nil, fmt.Errorf("making the large workspace: %w", err)
	}
	if repo {
		if err := makeRepo(big); err != nil {
			return nil, fmt.Errorf("making the large workspace a repository: %w", err)
		}
	}
	fmt.Printf("large workspace: %d files in %d directories\n", files, dirs)
	coldState := filepath.Join(home, ".state-cold")
	cold := withState(env, coldState)
	// The walk cache trusts a directory only once its ctime is older than
	// the walk by more than the clock's granularity (2 s).
	time.Sleep(2100 * time.Millisecond)
	none := func() error { return nil }
	cases := []caseSetup{
		{"cordon 100k", big, env, none, false},
		{"cordon 100k 1st", big, cold, func() error { return os.RemoveAll(filepath.Join(coldState, "cordon", "walk")) }, false},
	}
	if baseline != "" {
		baseCold := filepath.Join(home, ".state-cold-baseline")
		bcold := withState(env, baseCold)
		benv := withState(env, filepath.Join(home, ".state-baseline"))
		cases = append(cases, caseSetup{"baseline empty", ws, benv, none, true}, caseSetup{"baseline 100k", big, benv, none, true},
			caseSetup{"baseline 100k 1st", big, bcold, func() error { return os.RemoveAll(filepath.Join(baseCold, "cordon", "walk")) }, true})
	}
	return cases, nil
}

// makeWorkspace fills dir with files empty files, perDir in each leaf
// directory of a three-level tree (pkgNN/modNN/dirNN/fileN.go, 20 x 20
// directories above the leaves), and returns the number of directories,
// dir included: with 10 per directory, about a source tree's, 100,000
// files make 10,421 directories.
func makeWorkspace(dir string, files, perDir int) (int, error) {
	perDir = max(1, perDir)
	leaves := (files + perDir - 1) / perDir
	per := (leaves + 399) / 400
	dirs, made := 1, 0
	for i := 0; i < 20 && made < files; i++ {
		dirs++
		for j := 0; j < 20 && made < files; j++ {
			dirs++
			for k := 0; k < per && made < files; k++ {
				d := filepath.Join(dir, fmt.Sprintf("pkg%02d", i), fmt.Sprintf("mod%02d", j), fmt.Sprintf("dir%02d", k))
				if err := os.MkdirAll(d, 0o755); err != nil {
					return 0, err
				}
				dirs++
				for f := 0; f < perDir && made < files; f++ {
					if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("file%d.go", f)), nil, 0o644); err != nil {
						return 0, err
					}
					made++
				}
			}
		}
	}
	return dirs, nil
}

// makeRepo makes dir a git repository as a project's is: hooks in the work
// tree (core.hooksPath .githooks), a config file it includes, and a
// Python virtualenv's layout with a .pth file and an activate script.
func makeRepo(dir string) error {
	files := map[string]string{
		".githooks/pre-commit":                     "#!/bin/sh\nexit 0\n",
		".gitconfig.local":                         "[user]\n\tname = bench\n",
		".venv/pyvenv.cfg":                         "home = /usr/bin\n",
		".venv/bin/activate":                       "# activate\n",
		".venv/lib/python3.13/site-packages/x.pth": "/nonexistent\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			return err
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"config", "core.hooksPath", ".githooks"},
		{"config", "include.path", "../.gitconfig.local"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}
