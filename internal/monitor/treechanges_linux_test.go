//go:build linux

package monitor

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTreeChangesCounted: the count of tree changes (Stats.TreeChanges)
// sees every way a command adds a name to a directory or changes a
// file's permissions, however it reaches the directory (a descriptor of
// it, a renamed ancestor, another thread, a child process), under the
// count's own filter (seccomp.InstallTree, answered without reading
// anything) and under the watch's; and a command that only reads, writes
// or truncates existing files or removes them counts none. A run with
// none is not walked after it (planted.Options.TreeUnchanged): a call
// missed here would be a planted file missed there.
func TestTreeChangesCounted(t *testing.T) {
	requireWatch(t)
	py := ""
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3 -I -B -S -c "
	}
	tests := []struct {
		name   string
		cmd    string
		python bool
		want   bool
	}{
		{"nothing", "true", false, false},
		{"read, remove existing files", "cat r.txt; rm -f gone.txt; ls -la sub", false, false},
		{"chmod", "chmod 600 w.txt", false, true},
		{"chmod of a directory through a descriptor", `'import os; d=os.open("sub", os.O_RDONLY|os.O_DIRECTORY); os.fchmod(d, 0)'`, true, true},
		{"open O_WRONLY|O_TRUNC of an existing file", `'import os; f=os.open("w.txt", os.O_WRONLY|os.O_TRUNC); os.write(f, b"x")'`, true, false},
		{"redirect to a new file", "echo x > new.txt", false, true},
		{"append to an existing file (O_CREAT all the same)", "echo x >> w.txt", false, true},
		{"mkdir", "mkdir d", false, true},
		{"mkfifo", "mkfifo p", false, true},
		{"ln", "ln r.txt hard", false, true},
		{"ln -s", "ln -s r.txt soft", false, true},
		{"mv", "mv w.txt w2.txt", false, true},
		{"openat through a directory descriptor", `'import os; d=os.open("sub", os.O_RDONLY|os.O_DIRECTORY); os.open(".envrc", os.O_WRONLY|os.O_CREAT, 0o644, dir_fd=d)'`, true, true},
		{"rename of an ancestor", `'import os; os.rename("sub", "moved")'`, true, true},
		{"from another thread", `'import threading, os; t=threading.Thread(target=lambda: os.mkdir("t")); t.start(); t.join()'`, true, true},
		{"from a child process", "sh -c 'echo x > child.txt'", false, true},
		{"a unix socket", `'import socket; socket.socket(socket.AF_UNIX).bind("s.sock")'`, true, true},
		{"O_TMPFILE, not linked", `'import os; os.open(".", os.O_TMPFILE|os.O_WRONLY, 0o600)'`, true, false},
		{"a redirection to /dev/null (O_CREAT, counted all the same)", "echo x >/dev/null", false, true},
	}
	for _, scenario := range []string{"creates", "creates-watch"} {
		for _, tc := range tests {
			t.Run(scenario+"/"+tc.name, func(t *testing.T) {
				cmd := tc.cmd
				if tc.python {
					if py == "" {
						t.Skip("no python3")
					}
					cmd = py + cmd
				}
				dir := t.TempDir()
				for _, f := range []string{"r.txt", "w.txt", "gone.txt"} {
					if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
					t.Fatal(err)
				}
				var emit func(Event)
				if scenario == "creates-watch" {
					emit = func(Event) {}
				}
				c, m, ctl, out := countedWith(t, scenario, dir, emit, envCmd+"="+cmd)
				if _, err := ctl.Write([]byte{'g'}); err != nil {
					t.Fatal(err)
				}
				if err := c.Wait(); err != nil {
					t.Fatalf("%s: %v: %s", cmd, err, out.String())
				}
				<-m.Done()
				st := m.Stop()
				if got := st.TreeChanges > 0; got != tc.want {
					t.Errorf("%s: %d creating calls counted, want some: %v (%s)", cmd, st.TreeChanges, tc.want, out.String())
				}
			})
		}
	}
}
