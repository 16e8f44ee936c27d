package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// caseSetup is where a case runs other than the empty workspace: its
// directory and environment, and what to do (untimed) before each run.
type caseSetup struct {
	name   string
	dir    string
	env    []string
	before func() error
}

// bigCases makes a workspace of files files under tmp and returns the two
// cases run there: "cordon 100k", whose runs share the walk cache of the
// runs before (the second and later runs of a workspace), and "cordon 100k
// 1st", whose walk cache (in a state directory of its own) is removed
// before each run (the first run).
func bigCases(tmp, home string, env []string, files int) ([]caseSetup, error) {
	big := filepath.Join(tmp, "ws-big")
	dirs, err := makeWorkspace(big, files)
	if err != nil {
		return nil, fmt.Errorf("making the large workspace: %w", err)
	}
	fmt.Printf("large workspace: %d files in %d directories\n", files, dirs)
	coldState := filepath.Join(home, ".state-cold")
	var cold []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			kv = "XDG_STATE_HOME=" + coldState
		}
		cold = append(cold, kv)
	}
	// The walk cache trusts a directory only once its ctime is older than
	// the walk by more than the clock's granularity (2 s).
	time.Sleep(2100 * time.Millisecond)
	return []caseSetup{
		{"cordon 100k", big, env, func() error { return nil }},
		{"cordon 100k 1st", big, cold, func() error { return os.RemoveAll(filepath.Join(coldState, "cordon", "walk")) }},
	}, nil
}

// filesPerDir is how many files each leaf directory of the large workspace
// holds: with 20 x 20 directories above the leaves, 100,000 files make
// 10,421 directories, about the files per directory of a source tree.
const filesPerDir = 10

// makeWorkspace fills dir with files empty files in a three-level tree
// (pkgNN/modNN/dirNN/fileN.go) and returns the number of directories,
// dir included.
func makeWorkspace(dir string, files int) (int, error) {
	leaves := (files + filesPerDir - 1) / filesPerDir
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
				for f := 0; f < filesPerDir && made < files; f++ {
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
