//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestGitCopiesOnTmpfsKilled: under bubblewrap the private copies of the
// repositories' configs are made on a tmpfs (/dev/shm here), in a
// directory of the user's own (0700; each copy 0600) that the sandbox
// cannot see; a run killed with SIGKILL during its command leaves them,
// and its placeholders, and the next run removes both: nothing of it
// stays on the tmpfs, in the state directory or in the workspace.
func TestGitCopiesOnTmpfsKilled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var st syscall.Statfs_t
	if fi, err := os.Stat("/dev/shm"); err != nil || syscall.Statfs("/dev/shm", &st) != nil || st.Type != 0x01021994 || fi.Mode()&os.ModeSticky == 0 {
		skipOrFail(t, "/dev/shm is no sticky tmpfs here")
	}
	hostGit(t, e, e.ws, "init", "-q")
	for i := range 20 {
		hostGit(t, e, e.ws, "init", "-q", fmt.Sprintf("r%02d", i))
	}
	before := listing(t, e.ws)
	s := uniqueSleep(331)
	t.Cleanup(func() { killLeftovers(waitNoProcs([]string{"sleep " + s}, 0)) })
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	// Inside, /dev/shm is the sandbox's own: no copies there.
	cmd, errb, _ := startCordon(t, e, ctx, "run", "--", "sh", "-c",
		fmt.Sprintf(`git -C r03 config user.name Inside && test -z "$(ls -A /dev/shm)" && echo ready; exec sleep %s`, s))
	pattern := fmt.Sprintf("/dev/shm/cordon-%d-*/gitconfig-%d-*", os.Geteuid(), cmd.Process.Pid)
	copies, _ := filepath.Glob(pattern)
	if len(copies) != 1 {
		_ = cmd.Process.Kill()
		t.Fatalf("the run's copies' directory on /dev/shm: %v, want one (%s)\n%s", copies, pattern, errb.String())
	}
	for _, d := range []string{filepath.Dir(copies[0]), copies[0]} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode() != os.ModeDir|0o700 {
			t.Errorf("%s: %v %v, want a directory 0700", d, fi.Mode(), err)
		}
	}
	files, _ := os.ReadDir(copies[0])
	if len(files) != 21 {
		t.Errorf("%d copies, want 21 (the workspace's and 20 nested repositories')", len(files))
	}
	for _, f := range files {
		if fi, err := f.Info(); err != nil || fi.Mode() != 0o600 {
			t.Errorf("copy %s: %v %v, want 0600", f.Name(), fi.Mode(), err)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = waitCode(t, cmd)
	if left := waitNoProcs([]string{"sleep " + s}, cmdTimeout); len(left) > 0 {
		t.Fatalf("the sandbox survived kill -9 of cordon: %v", left)
	}
	if left, _ := filepath.Glob(pattern); len(left) != 1 {
		t.Fatalf("the killed run's copies are gone before the next run (%v): the test checks nothing", left)
	}
	if r := e.run("run", "--", "true"); r.code != 0 {
		t.Fatalf("next run after kill -9: %v", r)
	}
	if left, _ := filepath.Glob(pattern); len(left) > 0 {
		t.Errorf("the killed run's copies survived the next run: %v", left)
	}
	if left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/cordon-%d-*/gitconfig-*", os.Geteuid())); len(left) > 0 {
		t.Logf("other runs' copies on /dev/shm (other tests): %v", left)
	}
	if left, _ := filepath.Glob(filepath.Join(e.home, ".local", "state", "cordon", "gitconfig-*")); len(left) > 0 {
		t.Errorf("copies in the state directory: %v", left)
	}
	if d := diffListing(before, listing(t, e.ws)); d != "" {
		t.Errorf("the workspace changed (placeholders left?):\n%s", d)
	}
	if got := readFile(t, filepath.Join(e.ws, "r03", ".git", "config")); strings.Contains(got, "Inside") {
		t.Errorf("the killed run's config change reached the host: %q", got)
	}
}
