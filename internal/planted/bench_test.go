package planted

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheckUnchanged is the cost of the check after a run that
// planted nothing: 10 repositories in a tree of about 20,000 entries.
func BenchmarkCheckUnchanged(b *testing.B) {
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for r := range 10 {
		git := filepath.Join(ws, fmt.Sprintf("r%d", r), ".git")
		for _, d := range []string{"objects", "hooks"} {
			if err := os.MkdirAll(filepath.Join(git, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for name, content := range map[string]string{"HEAD": "ref: refs/heads/main\n", "config": "[core]\n\tfsmonitor = x\n", "hooks/pre-commit": "#!/bin/sh\n"} {
			if err := os.WriteFile(filepath.Join(git, name), []byte(content), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		for d := range 100 {
			dir := filepath.Join(ws, fmt.Sprintf("r%d", r), "src", fmt.Sprint(d))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 20 {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	dirs, names, _ := discover([]string{ws}, Limits{})
	before := Snapshot(dirs, names)
	b.ResetTimer()
	for b.Loop() {
		rep, err := before.Check([]string{ws}, Options{})
		if err != nil || len(rep.Findings) != 0 || rep.Incomplete != "" {
			b.Fatalf("%v %v", rep, err)
		}
	}
}

// BenchmarkSnapshot is the cost of the snapshot of 10 repositories.
func BenchmarkSnapshot(b *testing.B) {
	ws, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for r := range 10 {
		git := filepath.Join(ws, fmt.Sprintf("r%d", r), ".git")
		if err := os.MkdirAll(filepath.Join(git, "hooks"), 0o755); err != nil {
			b.Fatal(err)
		}
		for _, h := range []string{"pre-commit.sample", "pre-push.sample", "commit-msg.sample"} {
			if err := os.WriteFile(filepath.Join(git, "hooks", h), nil, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(git, "config"), []byte("[core]\n\tbare = false\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		dirs = append(dirs, git)
	}
	for b.Loop() {
		Snapshot(dirs, nil)
	}
}
