//go:build linux

package helper

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestDedupEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, []string{}},
		{"unique", []string{"A=1", "B=2"}, []string{"A=1", "B=2"}},
		{"last wins", []string{"A=1", "B=2", "A=3"}, []string{"B=2", "A=3"}},
		{"empty value counts", []string{"A=1", "A="}, []string{"A="}},
		{"no equals kept, empty dropped", []string{"BOGUS", "", "A=1"}, []string{"BOGUS", "A=1"}},
		{"value with equals", []string{"A=x=y", "A=z"}, []string{"A=z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dedupEnv(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("dedupEnv(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestLookPath: the command is looked up in the spec's PATH, not the
// helper's own (which has no PATH: plan.LauncherEnv).
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "cordon-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		own     string // the helper's own PATH
		env     []string
		cmd     string
		want    string
		wantErr error
	}{
		{"spec PATH", "/usr/bin:/bin", []string{"PATH=/nonexistent:" + dir}, "cordon-test-tool", tool, nil},
		{"own PATH ignored", dir, []string{"PATH=/nonexistent"}, "cordon-test-tool", "", exec.ErrNotFound},
		{"no PATH in the spec", dir, []string{"HOME=/"}, "cordon-test-tool", "", exec.ErrNotFound},
		{"last PATH wins", "", []string{"PATH=/nonexistent", "PATH=" + dir}, "cordon-test-tool", tool, nil},
		{"absolute", "", nil, tool, tool, nil},
		{"absolute missing", "", nil, filepath.Join(dir, "missing"), "", os.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", tc.own)
			got, err := lookPath(tc.cmd, tc.env)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("lookPath(%q, %q) = %q, %v; want %v", tc.cmd, tc.env, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("lookPath(%q, %q) = %q, %v; want %q", tc.cmd, tc.env, got, err, tc.want)
			}
		})
	}
}

func TestWithPWD(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"added", []string{"A=1"}, []string{"A=1", "PWD=" + wd}},
		{"kept", []string{"PWD=/elsewhere", "A=1"}, []string{"PWD=/elsewhere", "A=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withPWD(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("withPWD(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
