//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/enforce/limits"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
)

// TestManyRepositoriesHelperMounts: in a workspace of many nested
// repositories the helper makes the protected paths' mounts itself
// (plan.HelperMountsFrom), and every guarantee holds as with bwrap's:
// each nested repository's hooks, config and commondir stay read-only
// (or a private copy) and its git directory cannot be moved away, a
// repository nested in another's work tree too; nothing is left in the
// workspace; and the command runs as the user's own uid and gid, with no
// capability at all, no_new_privs and seccomp, its exit status and its
// death by a signal passed on.
func TestManyRepositoriesHelperMounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, ".git", "HEAD"), "ref: refs/heads/main\n")
	mkdir(t, filepath.Join(e.ws, ".git", "objects"))
	mkdir(t, filepath.Join(e.ws, ".git", "refs"))
	var repos []string
	for i := range 30 {
		repos = append(repos, fmt.Sprintf("r%02d", i))
	}
	repos = append(repos, "r01/vendor/deep") // a repository in another's work tree
	for _, r := range repos {
		g := filepath.Join(e.ws, r, ".git")
		writeFile(t, filepath.Join(g, "HEAD"), "ref: refs/heads/main\n")
		writeFile(t, filepath.Join(g, "config"), "[core]\n\tbare = false\n")
		writeFile(t, filepath.Join(g, "hooks", "pre-commit"), "#!/bin/sh\necho original hook\n")
		mkdir(t, filepath.Join(g, "objects"))
		mkdir(t, filepath.Join(g, "refs"))
	}
	before := listing(t, e.ws)

	// The helper made the mounts: bwrap bound their placeholders'
	// sources for it.
	if r := e.sh("test -d " + helperspec.PlaceholderDir); r.code != 0 {
		t.Fatalf("no %s inside: the helper did not make the mounts (raise the repositories above plan.HelperMountsFrom)\n%s", helperspec.PlaceholderDir, r)
	}
	for _, r := range []string{"r07", "r29", "r01/vendor/deep"} {
		for _, a := range []string{
			`echo evil >> R/.git/hooks/pre-commit`,
			`echo evil > R/.git/hooks/post-checkout`,
			`rm -rf R/.git/hooks && test ! -e R/.git/hooks`,
			`mv R/.git/hooks R/.git/hooks.old`,
			`rm -f R/.git/config && test ! -e R/.git/config`,
			`echo /tmp > R/.git/commondir`,
			`echo '[core] hooksPath = /tmp' > R/.git/config.worktree`,
			`mv R/.git R/.git2`,
		} {
			a = strings.ReplaceAll(a, "R/", r+"/")
			if res := e.sh(a); res.code == 0 {
				t.Errorf("%q succeeded:\n%s", a, res)
			}
		}
		// The config is a private copy: git may write it inside, and
		// nothing of it but the keys cordon writes back reaches the host.
		e.sh(`git -C ` + r + ` config core.hooksPath /tmp/evil`)
		if got := readFile(t, filepath.Join(e.ws, r, ".git", "config")); strings.Contains(got, "hooksPath") {
			t.Errorf("%s/.git/config changed on the host: %q", r, got)
		}
		if got := readFile(t, filepath.Join(e.ws, r, ".git", "hooks", "pre-commit")); got != "#!/bin/sh\necho original hook\n" {
			t.Errorf("%s hook changed: %q", r, got)
		}
	}
	// git writes a nested repository's config through its private copy
	// (bound by the helper), and its safe keys reach the host; the
	// copies' directory is gone before the command starts.
	if r := e.sh(`git -C r07 config user.name Zed && test -z "$(ls -A ` + helperspec.GitConfigDir + `)"`); r.code != 0 {
		t.Errorf("git config in a nested repository, or the copies' directory:\n%s", r)
	}
	if got := readFile(t, filepath.Join(e.ws, "r07", ".git", "config")); !strings.Contains(got, "Zed") {
		t.Errorf("r07's user.name was not written back: %q", got)
	}
	writeFile(t, filepath.Join(e.ws, "r07", ".git", "config"), "[core]\n\tbare = false\n")
	// Ordinary work inside a nested git directory still works.
	if r := e.sh(`echo o > r07/.git/objects/x && echo ok > r07/ok.txt`); r.code != 0 {
		t.Errorf("writing ordinary files in a nested repository failed:\n%s", r)
	}
	for _, f := range []string{"r07/.git/objects/x", "r07/ok.txt"} {
		if err := os.Remove(filepath.Join(e.ws, f)); err != nil {
			t.Errorf("%s was not written: %v", f, err)
		}
	}
	if d := diffListing(before, listing(t, e.ws)); d != "" {
		t.Errorf("the workspace changed on the host (placeholders left?):\n%s", d)
	}

	// The command's credentials: its user's uid and gid, no capability
	// in any set, no_new_privs, a seccomp filter.
	r := e.sh(`id -u; id -g; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status`)
	if r.code != 0 {
		t.Fatalf("reading the credentials failed:\n%s", r)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 2 || lines[0] != strconv.Itoa(os.Getuid()) || lines[1] != strconv.Itoa(os.Getgid()) {
		t.Errorf("the command does not run as uid %d, gid %d:\n%s", os.Getuid(), os.Getgid(), r)
	}
	want := map[string]string{"CapInh": "0000000000000000", "CapPrm": "0000000000000000", "CapEff": "0000000000000000",
		"CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}
	for _, l := range lines[min(2, len(lines)):] {
		k, v, _ := strings.Cut(l, ":")
		if w, ok := want[k]; ok {
			if strings.TrimSpace(v) != w {
				t.Errorf("%s is %s, want %s", k, strings.TrimSpace(v), w)
			}
			delete(want, k)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing from /proc/self/status: %v\n%s", want, r)
	}
	cpuView(t, e)
	// Its exit status, and its death by a signal, reach the caller.
	if r := e.sh(`exit 7`); r.code != 7 {
		t.Errorf("exit 7 ended with %d:\n%s", r.code, r)
	}
	if r := e.sh(`kill -TERM $$`); r.code != 128+15 {
		t.Errorf("a command killed by SIGTERM ended with %d, want 143:\n%s", r.code, r)
	}
}

// cpuView checks, in a sandbox of many mounts, what a Go program started
// inside reads as it starts: /proc/self/cgroup, then the mount table up to
// the first cgroup mount holding its CPU cgroup (internal/runtime/cgroup).
// Where this host gives a run a cgroup, that mount is the group's own
// directory (limits.CPUView), read-only, among the first lines, before
// every protected path's; where it does not, the sandbox has no cgroup
// mount at all.
func cpuView(t *testing.T, e *sandboxEnv) {
	t.Helper()
	g, err := limits.NewWithCPU("probe", limits.Limits{MaxProcesses: 1 << 20})
	_, want := g.CPUView()
	if err == nil {
		g.Close()
	}
	r := e.sh(`cat /proc/self/cgroup; echo ===; cat /proc/self/mountinfo`)
	cg, mi, ok := strings.Cut(r.stdout, "===\n")
	if r.code != 0 || !ok {
		t.Fatalf("reading the cgroups and mounts inside:\n%s", r)
	}
	self := limits.SelfCgroups([]byte(cg))
	lines := strings.Split(strings.TrimSpace(mi), "\n")
	at, seen, point := 0, false, ""
	for i, l := range lines {
		ms := limits.CgroupMounts([]byte(l))
		if len(ms) == 0 {
			continue
		}
		seen = true
		m := ms[0]
		path, v1 := self["cpu"]
		if !v1 {
			path = self[""]
		}
		if v1 && (m.FSType != "cgroup" || !slices.Contains(m.Opts, "cpu")) || !v1 && m.FSType != "cgroup2" {
			continue
		}
		if m.Root == "/" || path == m.Root || strings.HasPrefix(path, m.Root+"/") {
			at, point = i+1, m.Point
			break
		}
	}
	if !want {
		if seen {
			t.Errorf("no group with a CPU view here, yet a cgroup mount inside:\n%s", mi)
		}
		return
	}
	if at == 0 || at > 64 || len(lines) < 100 {
		t.Fatalf("the command's CPU cgroup (%s) is at line %d of %d of the mount table, want among the first 64 of a table of many mounts:\n%s", cg, at, len(lines), mi)
	}
	// Readable, so that what follows finds what is there; no file of it
	// writable, not even by root's command, whose uid owns them (it would
	// raise its own limits); no other group below it.
	r = e.sh(`cat ` + point + `/cgroup.procs >/dev/null || exit 3; for f in ` + point + `/*; do if (echo 1 > "$f") 2>/dev/null; then echo "wrote $f"; fi; done; find ` + point + ` -mindepth 1 -type d`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
		t.Errorf("the view at %s is not readable, is writable or shows another cgroup:\n%s", point, r)
	}
}
