//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// unlistableSecrets makes dir/config with two files the default deny globs
// match (secrets.yaml, .env.local) and one they do not (app.yaml).
func unlistableSecrets(t *testing.T, dir string) string {
	t.Helper()
	c := filepath.Join(dir, "config")
	writeFile(t, filepath.Join(c, "secrets.yaml"), "YAML-SECRET-61c2\n")
	writeFile(t, filepath.Join(c, ".env.local"), "ENV-SECRET-8d0e\n")
	writeFile(t, filepath.Join(c, "app.yaml"), "app\n")
	t.Cleanup(func() { os.Chmod(c, 0o755) })
	return c
}

// noSecret fails the test if r printed either secret of unlistableSecrets.
func noSecret(t *testing.T, what string, r runResult) {
	t.Helper()
	if strings.Contains(r.all(), "YAML-SECRET-61c2") || strings.Contains(r.all(), "ENV-SECRET-8d0e") {
		t.Errorf("%s: a secret in a directory that cannot be listed was read:\n%s", what, r)
	}
}

// noneRenamed fails the test if anything in dir was renamed aside.
func noneRenamed(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".cordon-disarmed") {
			t.Errorf("%s was renamed aside", e.Name())
		}
	}
}

// TestUnlistableDirHidesNothing: a directory the deny rules' walk cannot
// list (mode 0311: searchable, not listable) hides no secret. A run that
// makes one so in the workspace has its mode given back after it, said
// once, and the next run finds and hides the secrets; one that was so
// before the run is hidden whole, in the workspace and in a read path, on
// both backends (the Landlock-only one cannot hide anything inside a
// writable root: there only the read path is tried). Nothing is renamed.
// As root the walk lists everything: the test shows that the secrets stay
// hidden after the run's chmod and that nothing is renamed or reported.
func TestUnlistableDirHidesNothing(t *testing.T) {
	t.Parallel()
	const cat = `cat config*/secrets.yaml config*/.env.local; true`
	t.Run("made by a run", func(t *testing.T) {
		e := newEnv(t)
		c := unlistableSecrets(t, e.ws)
		r := e.sh(`chmod 311 config`)
		if r.code != 0 {
			t.Fatal(r)
		}
		want := "cordon: warning: the run made " + c + " unreadable (mode 0311): its owner's read and search permission was given back (mode 0711), and it was checked"
		fi, err := os.Stat(c)
		if err != nil {
			t.Fatal(err)
		}
		if isRoot() {
			if strings.Contains(r.stderr, "unreadable") || fi.Mode().Perm() != 0o311 {
				t.Errorf("as root nothing is hidden from the check, and nothing is said or changed: %v\n%s", fi.Mode(), r)
			}
		} else if strings.Count(r.stderr, want) != 1 || fi.Mode().Perm() != 0o711 {
			t.Errorf("mode %v, want 0711 and once %q:\n%s", fi.Mode(), want, r)
		}
		for i := 0; i < 2; i++ {
			r = e.sh(cat)
			noSecret(t, "the next run", r)
			if strings.Contains(r.stderr, "unreadable") {
				t.Errorf("a later run speaks of it again:\n%s", r)
			}
		}
		noneRenamed(t, e.ws)
	})
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run("before the run/"+backend, func(t *testing.T) {
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			data := filepath.Join(e.home, "data")
			dirs := map[string]string{"read path": data}
			if backend == "bwrap" {
				dirs["workspace"] = e.ws
			}
			for _, d := range dirs {
				if err := os.Chmod(unlistableSecrets(t, d), 0o311); err != nil {
					t.Fatal(err)
				}
			}
			// Closed by the user, well before the run.
			time.Sleep(1100 * time.Millisecond)
			for what, d := range dirs {
				r := e.run("run", "--backend", backend, "--allow-read", data, "--", "sh", "-c", "cd "+d+" && "+cat)
				noSecret(t, what, r)
				note := ""
				for _, l := range strings.Split(r.stderr, "\n") {
					if strings.HasPrefix(l, "cordon: note: ") && strings.Contains(l, filepath.Join(d, "config")) {
						note = l
					}
				}
				if !isRoot() && (!strings.Contains(note, "cannot be listed, so the deny rules could not search") || !strings.Contains(note, ": hidden whole in this run")) {
					t.Errorf("%s: no note that it is hidden whole:\n%s", what, r)
				}
				if strings.Contains(r.stderr, "unreadable") {
					t.Errorf("%s: the check speaks of a directory the user closed:\n%s", what, r)
				}
				if fi, err := os.Stat(filepath.Join(d, "config")); err != nil || fi.Mode().Perm() != 0o311 {
					t.Errorf("%s: the user's mode was changed: %v %v", what, fi.Mode(), err)
				}
				noneRenamed(t, d)
			}
		})
	}
}
