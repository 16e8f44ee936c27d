//go:build linux

package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// The contents the swap race test plants; none of the secret ones may ever
// come back, and none of the protected ones may change.
const (
	swapSecret     = "TOPSECRET-7f3a"
	swapSecretName = "secret-key.pem"
	swapGitConfig  = "[core]\n\trepositoryformatversion = 0\n"
	swapHook       = "#!/bin/sh\necho original hook\n"
	swapEnvrc      = "export ORIGINAL=1\n"
	swapPwned      = "[core]\n\tfsmonitor = touch pwned\n"
)

// swapTree makes the workspace of the swap race test: a git directory with
// config and a hook, a denied directory secrets.d (denied by "**/secrets.*"
// as a whole), a protected file .envrc, an ordinary directory a and file f
// that the swapper exchanges with symbolic links to those, and the links.
func swapTree(t *testing.T, ws string) {
	t.Helper()
	mkGitDir(t, filepath.Join(ws, ".git"), false)
	mustWrite(t, filepath.Join(ws, ".git", "config"), swapGitConfig)
	mustMkdir(t, filepath.Join(ws, ".git", "hooks"))
	mustWrite(t, filepath.Join(ws, ".git", "hooks", "pre-commit"), swapHook)
	mustMkdir(t, filepath.Join(ws, "secrets.d"))
	mustWrite(t, filepath.Join(ws, "secrets.d", "token"), swapSecret+"\n")
	mustWrite(t, filepath.Join(ws, "secrets.d", "config"), swapSecret+"\n")
	mustWrite(t, filepath.Join(ws, "secrets.d", swapSecretName), swapSecret+"\n")
	mustWrite(t, filepath.Join(ws, ".envrc"), swapEnvrc)
	mustMkdir(t, filepath.Join(ws, "a", "hooks"))
	mustWrite(t, filepath.Join(ws, "a", "config"), "[core]\n")
	mustWrite(t, filepath.Join(ws, "a", "token"), "public\n")
	mustWrite(t, filepath.Join(ws, "a", "pre-commit"), "public\n")
	mustWrite(t, filepath.Join(ws, "f"), "public\n")
	mustLink(t, ".git", filepath.Join(ws, "l-git"))
	mustLink(t, ".git/hooks", filepath.Join(ws, "l-hooks"))
	mustLink(t, "secrets.d", filepath.Join(ws, "l-secrets"))
	mustLink(t, filepath.Join(ws, "secrets.d"), filepath.Join(ws, "l-secrets-abs"))
	mustLink(t, ".envrc", filepath.Join(ws, "l-envrc"))
}

// treeState records the entries below .git and secrets.d ("dir/" for a
// directory) and .envrc, with the contents of files.
func treeState(t *testing.T, ws string) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, top := range []string{".git", "secrets.d"} {
		err := filepath.WalkDir(filepath.Join(ws, top), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(ws, p)
			if d.IsDir() {
				state[rel+"/"] = ""
				return nil
			}
			b, err := os.ReadFile(p)
			state[rel] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, ".envrc"))
	if err != nil {
		t.Fatal(err)
	}
	state[".envrc"] = string(b)
	return state
}

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	return len(ents)
}

// swapOp is one file-tool operation of the swap race: it returns the text
// the tool would show the agent (empty on an error) and the error.
type swapOp struct {
	name string
	do   func(f *FS) (string, error)
}

// swapOps are the operations the swap race repeats; each names a path
// through a or f, which the swapper keeps exchanging with links to .git,
// .git/hooks, secrets.d and .envrc.
func swapOps() []swapOp {
	core := "1:" + LineHash("[core]")
	return []swapOp{
		{"write_file a/config", func(f *FS) (string, error) { _, err := f.WriteFile("a/config", swapPwned); return "", err }},
		{"write_file a/pre-commit", func(f *FS) (string, error) {
			_, err := f.WriteFile("a/pre-commit", "#!/bin/sh\ntouch pwned\n")
			return "", err
		}},
		{"write_file a/hooks/post-checkout", func(f *FS) (string, error) {
			_, err := f.WriteFile("a/hooks/post-checkout", "#!/bin/sh\ntouch pwned\n")
			return "", err
		}},
		{"write_file a/new/config", func(f *FS) (string, error) { _, err := f.WriteFile("a/new/config", swapPwned); return "", err }},
		{"write_file f", func(f *FS) (string, error) { _, err := f.WriteFile("f", "export PWNED=1\n"); return "", err }},
		{"edit_file a/config", func(f *FS) (string, error) {
			_, err := f.EditFile("a/config", "[core]\n", swapPwned)
			return "", err
		}},
		{"replace_lines a/config", func(f *FS) (string, error) {
			_, err := f.ReplaceLines("a/config", core, core, "[core]\n\tfsmonitor = touch pwned")
			return "", err
		}},
		{"edit_file f", func(f *FS) (string, error) { _, err := f.EditFile("f", "public", "export PWNED=1"); return "", err }},
		{"create_dir a/hooks/d", func(f *FS) (string, error) { _, err := f.Mkdir("a/hooks/d"); return "", err }},
		{"create_dir a/d", func(f *FS) (string, error) { _, err := f.Mkdir("a/d"); return "", err }},
		{"read_file a/token", func(f *FS) (string, error) {
			r, err := f.ReadText("a/token", 0, 0)
			if err != nil {
				return "", err
			}
			return r.Text, nil
		}},
		{"read_file a/secret-key.pem", func(f *FS) (string, error) {
			r, err := f.ReadFile("a/"+swapSecretName, 0, 0)
			if err != nil {
				return "", err
			}
			return r.Text(), nil
		}},
		{"grep a", func(f *FS) (string, error) { return grepText(f.Grep("SECRET|public", "a", GrepOptions{})) }},
		{"grep a/token", func(f *FS) (string, error) { return grepText(f.Grep("SECRET|public", "a/token", GrepOptions{})) }},
		{"grep .", func(f *FS) (string, error) { return grepText(f.Grep("TOPSECRET", "", GrepOptions{Literal: true})) }},
		{"find_files a", func(f *FS) (string, error) {
			r, err := f.Find("a", "**", FindOptions{})
			if err != nil {
				return "", err
			}
			return strings.Join(r.Paths, "\n"), nil
		}},
		{"list_dir a", func(f *FS) (string, error) {
			r, err := f.List("a")
			if err != nil {
				return "", err
			}
			var names []string
			for _, e := range r.Entries {
				names = append(names, e.Name)
			}
			return strings.Join(names, "\n"), nil
		}},
		{"file_info a/secret-key.pem", func(f *FS) (string, error) {
			e, err := f.Info("a/" + swapSecretName)
			if err != nil {
				return "", err
			}
			return e.Name, nil
		}},
	}
}

func grepText(r *GrepResult, err error) (string, error) {
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, m.Text)
	}
	return b.String(), nil
}

// TestSwapRace is the symlink-swap attack: while a swapper exchanges a directory
// a with symbolic links to .git, .git/hooks and a denied directory (and a
// file f with a link to the protected .envrc) with renameat2
// (RENAME_EXCHANGE) as fast as it can, the file tools write, edit, create,
// read, grep, find and list through a and f. None of at least 10,000
// operations may reach a protected or denied path: .git, secrets.d and
// .envrc are unchanged afterwards, and no secret content or name is ever
// returned. Descriptors do not leak.
func TestSwapRace(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	mustMkdir(t, ws)
	swapTree(t, ws)
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Write: []string{ws},
		Deny: []string{"**/secrets.*"}, Protected: policy.Protected}
	fsys, err := New(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	before := treeState(t, ws)
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "f"), unix.AT_FDCWD, filepath.Join(ws, "l-envrc"), unix.RENAME_EXCHANGE); err != nil {
		t.Skip("renameat2(RENAME_EXCHANGE) unsupported here:", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, "f"), unix.AT_FDCWD, filepath.Join(ws, "l-envrc"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	fds := openFDs(t)

	minOps, budget := 10000, 3*time.Minute
	if testing.Short() {
		minOps, budget = 2000, 30*time.Second
	}
	var stop atomic.Bool
	var swaps atomic.Int64
	var swappers sync.WaitGroup
	exchange := func(x, y string) {
		defer swappers.Done()
		for i := 0; !stop.Load(); i++ {
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(ws, x), unix.AT_FDCWD, filepath.Join(ws, y), unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}
	// One swapper per link: a is exchanged with each in turn, and the
	// exchanges of different swappers interleave, so a is at times a link
	// and at times the directory, under any of the names.
	swappers.Add(5)
	for _, l := range []string{"l-git", "l-hooks", "l-secrets", "l-secrets-abs"} {
		go exchange("a", l)
	}
	go exchange("f", "l-envrc")

	ops := swapOps()
	type tally struct{ ok, refused, other int }
	counts := make([]tally, len(ops))
	var mu sync.Mutex
	var leaks []string
	var done atomic.Int64
	deadline := time.Now().Add(budget)
	var workers sync.WaitGroup
	for w := 0; w < 2; w++ {
		workers.Add(1)
		go func(w int) {
			defer workers.Done()
			local := make([]tally, len(ops))
			for i := w; done.Load() < int64(minOps) && time.Now().Before(deadline); i++ {
				op := ops[i%len(ops)]
				out, err := op.do(fsys)
				done.Add(1)
				var v *Violation
				switch {
				case err == nil:
					local[i%len(ops)].ok++
				case errors.As(err, &v):
					local[i%len(ops)].refused++
				default:
					local[i%len(ops)].other++
				}
				if strings.Contains(out, "TOPSECRET") || strings.Contains(out, swapSecretName) {
					mu.Lock()
					leaks = append(leaks, op.name+": "+out)
					mu.Unlock()
				}
			}
			mu.Lock()
			for i := range counts {
				counts[i].ok += local[i].ok
				counts[i].refused += local[i].refused
				counts[i].other += local[i].other
			}
			mu.Unlock()
		}(w)
	}
	workers.Wait()
	stop.Store(true)
	swappers.Wait()

	total, refused := 0, 0
	for i, c := range counts {
		t.Logf("%-30s ok %5d  refused %5d  other errors %5d", ops[i].name, c.ok, c.refused, c.other)
		total += c.ok + c.refused + c.other
		refused += c.refused
	}
	t.Logf("%d operations, %d exchanges", total, swaps.Load())
	for _, l := range leaks {
		t.Errorf("denied content returned: %s", l)
	}
	after := treeState(t, ws)
	for _, k := range sortedKeys(before, after) {
		// Ordinary entries of .git may be written; protected and denied
		// ones may not.
		if !strings.HasPrefix(k, "secrets.d/") && policy.ProtectedBy(policy.Protected, k) == "" {
			continue
		}
		_, was := before[k]
		_, is := after[k]
		switch {
		case !was:
			t.Errorf("%s was created", k)
		case !is:
			t.Errorf("%s was removed", k)
		case before[k] != after[k]:
			t.Errorf("%s changed: %q -> %q", k, before[k], after[k])
		}
	}
	if total < minOps {
		t.Errorf("only %d operations ran within %v, want %d", total, budget, minOps)
	}
	if refused == 0 || swaps.Load() == 0 {
		t.Errorf("the race did not happen: %d refusals, %d exchanges", refused, swaps.Load())
	}
	if n := openFDs(t); n > fds+2 {
		t.Errorf("descriptors leaked: %d open, %d before", n, fds)
	}
}

// sortedKeys returns the keys of both maps, sorted and without repeats.
func sortedKeys(a, b map[string]string) []string {
	var ks []string
	for k := range a {
		ks = append(ks, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			ks = append(ks, k)
		}
	}
	slices.Sort(ks)
	return ks
}
