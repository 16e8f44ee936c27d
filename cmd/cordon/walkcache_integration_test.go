//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWalkCacheRestoredMtime: the walk for deny globs is cached between
// runs in cordon's state directory, and a run cannot make the next one
// trust a stale walk: it creates sub/.env and sets sub's modification
// time back to what it was (touch -d, to the nanosecond), but sub's
// ctime still changed, so the next run walks sub again and denies the
// .env (bwrap masks it; on the Landlock-only backend the supervisor
// refuses to create the denied name in the first place). The cache's
// files are private to the user.
func TestWalkCacheRestoredMtime(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			sub := filepath.Join(e.ws, "sub")
			writeFile(t, filepath.Join(sub, "plain.txt"), "PLAIN-PUBLIC-6d1")
			writeFile(t, filepath.Join(e.ws, "deep", "a", "b", "c.txt"), "DEEP-PUBLIC-6d2")
			// Enough directories for the walk to be cached (64).
			for i := range 80 {
				mkdir(t, filepath.Join(e.ws, "pkg", fmt.Sprint(i/10), fmt.Sprint(i)))
			}
			// The cache trusts a directory only if its ctime is older than
			// the walk by more than the clock's granularity (2 s).
			time.Sleep(2100 * time.Millisecond)
			bf := []string{"--backend", backend}
			if r := e.sh("cat sub/plain.txt", bf...); r.code != 0 || !strings.Contains(r.stdout, "PLAIN-PUBLIC-6d1") {
				t.Fatalf("first run: %s", r)
			}
			walk := filepath.Join(e.home, ".local", "state", "cordon", "walk")
			checkPrivate(t, walk, true)
			ents, err := os.ReadDir(walk)
			if err != nil || len(ents) == 0 {
				t.Fatalf("no walk cache after a run: %v %v", ents, err)
			}
			for _, f := range ents {
				checkPrivate(t, filepath.Join(walk, f.Name()), false)
			}
			before, err := os.Stat(sub)
			if err != nil {
				t.Fatal(err)
			}
			r := e.sh(`m=$(stat -c %y sub) && echo WALKCACHE-SECRET-6d3 > sub/.env && touch -d "$m" sub`, bf...)
			if backend == "landlock" {
				// The supervisor refuses to create a denied name at all.
				if r.code == 0 || exists(filepath.Join(sub, ".env")) {
					t.Errorf("the Landlock-only backend let the command create sub/.env: %s", r)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("the attack did not run: %s", r)
			}
			after, err := os.Stat(sub)
			if err != nil || !after.ModTime().Equal(before.ModTime()) || !exists(filepath.Join(sub, ".env")) {
				t.Fatalf("the attack did not restore sub's mtime (%v, was %v) or make sub/.env: %v", after.ModTime(), before.ModTime(), err)
			}
			r = e.sh("cat sub/.env; cat deep/a/b/c.txt", bf...)
			if !strings.Contains(r.stdout, "DEEP-PUBLIC-6d2") {
				t.Errorf("the run after the attack did not run: %s", r)
			}
			if strings.Contains(r.all(), "WALKCACHE-SECRET-6d3") || !strings.Contains(userStderr(r.stderr), "Permission denied") {
				t.Errorf("sub/.env, made by a run that set sub's mtime back, was readable in the next: %s", r)
			}
		})
	}
}

// checkPrivate fails unless path is a directory (or a regular file, dir
// false) of this user that no one else can write.
func checkPrivate(t *testing.T, path string, dir bool) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.IsDir() != dir || (!dir && !fi.Mode().IsRegular()) || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("%s: mode %v, want a private %s", path, fi.Mode(), map[bool]string{true: "directory", false: "file"}[dir])
	}
}

// TestWalkCacheMovedSubtree: a run that moves directories around cannot
// make the next one trust a stale walk. Secrets the user made (.env files)
// sit deep in subtrees whose own directories keep their ctimes when an
// ancestor is moved: run 2 moves a/b (holding b/c/d/.env) under another
// cached directory x, and swaps p/q and r/q (only p/q/s/.env existed)
// through a temporary name. Run 3 must deny both .env files at their new
// paths: a moved directory is looked up by path, and trusted only if the
// directory at that path is the one recorded there.
func TestWalkCacheMovedSubtree(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			writeFile(t, filepath.Join(e.ws, "a", "b", "c", "d", ".env"), "MOVED-SECRET-7a1")
			writeFile(t, filepath.Join(e.ws, "a", "b", "c", "d", "plain.txt"), "MOVED-PUBLIC-7a2")
			writeFile(t, filepath.Join(e.ws, "p", "q", "s", ".env"), "SWAPPED-SECRET-7a3")
			mkdir(t, filepath.Join(e.ws, "r", "q", "s"))
			mkdir(t, filepath.Join(e.ws, "x", "y"))
			for i := range 80 {
				mkdir(t, filepath.Join(e.ws, "pkg", fmt.Sprint(i/10), fmt.Sprint(i)))
			}
			time.Sleep(2100 * time.Millisecond)
			bf := []string{"--backend", backend}
			if r := e.sh("cat a/b/c/d/plain.txt", bf...); r.code != 0 || !strings.Contains(r.stdout, "MOVED-PUBLIC-7a2") {
				t.Fatalf("first run: %s", r)
			}
			// Let the cache trust the whole tree (run 1 read it > 2 s after
			// it was made) before the moves.
			if r := e.sh(`mv a/b x/y/b && mv p/q t && mv r/q p/q && mv t r/q`, bf...); r.code != 0 {
				t.Fatalf("the moves did not run: %s", r)
			}
			if !exists(filepath.Join(e.ws, "x", "y", "b", "c", "d", ".env")) || !exists(filepath.Join(e.ws, "r", "q", "s", ".env")) {
				t.Fatal("the moves did not move the .env files")
			}
			r := e.sh("cat x/y/b/c/d/.env r/q/s/.env; cat x/y/b/c/d/plain.txt", bf...)
			if !strings.Contains(r.stdout, "MOVED-PUBLIC-7a2") {
				t.Errorf("the run after the moves did not run: %s", r)
			}
			for _, env := range []string{filepath.Join(e.ws, "x", "y", "b", "c", "d", ".env"), filepath.Join(e.ws, "r", "q", "s", ".env")} {
				// bwrap masks what the walk finds; the Landlock-only
				// backend's supervisor refuses it by its rule.
				if strings.Contains(r.all(), "SECRET-7a") || !strings.Contains(r.stderr, filepath.Base(filepath.Dir(env))+"/.env: Permission denied") {
					t.Errorf("a moved .env (%s) was readable in the next run: %s", env, r)
				}
			}
		})
	}
}
