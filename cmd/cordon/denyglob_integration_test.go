//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDenyGlobsInReadPaths: relative deny globs (**/.env, **/secrets.*)
// apply inside the read paths a user adds, not only in the workspace and
// the writable roots: a secret at depth in an --allow-read directory, an
// --allow-read path that is itself a denied file, and a link named
// otherwise to one are "Permission denied" on both backends, while the
// files beside them stay readable. A read path that holds a tool cache
// (--allow-read ~) is searched around it: what a glob matches in the cache
// (a crate's secrets.rs in cargo's registry) stays readable. (Not Go's
// module cache: on bwrap its host path shows the sandbox's own.)
func TestDenyGlobsInReadPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.home, "d")
	envFile := filepath.Join(e.home, ".env")
	control := filepath.Join(e.home, "control.txt")
	link := filepath.Join(e.home, "settings")
	secrets := map[string]string{
		filepath.Join(dir, ".env"):                           "DIRENV-SECRET-3a1",
		filepath.Join(dir, "sub", "deep", "secrets.json"):    "DEEPJSON-SECRET-3a2",
		filepath.Join(dir, "sub", "deep", ".env.production"): "DEEPENV-SECRET-3a3",
		envFile:                                "FILEROOT-SECRET-3a4",
		filepath.Join(e.root, "vault", ".env"): "LINKED-SECRET-3a5",
	}
	for p, s := range secrets {
		writeFile(t, p, s)
	}
	if err := os.Symlink(filepath.Join(e.root, "vault", ".env"), link); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "deep", "plain.txt"), "PLAIN-PUBLIC-3b1")
	writeFile(t, control, "CONTROL-PUBLIC-3b2")
	modFile := filepath.Join(e.home, ".cargo", "registry", "src", "index", "m-1.0.0", "src", "secrets.rs")
	writeFile(t, modFile, "// MODCACHE-PUBLIC-3b3")
	flags := []string{"--allow-read", dir, "--allow-read", envFile, "--allow-read", control, "--allow-read", link}
	denied := []string{
		filepath.Join(dir, ".env"),
		filepath.Join(dir, "sub", "deep", "secrets.json"),
		filepath.Join(dir, "sub", "deep", ".env.production"),
		envFile,
		link,
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "landlock" {
				requireLandlock(t)
			}
			bf := append([]string{"--backend", backend}, flags...)
			for _, p := range denied {
				r := e.sh("cat "+p, bf...)
				if r.code == 0 || !strings.Contains(userStderr(r.stderr), "Permission denied") {
					t.Errorf("cat %s: want Permission denied, got:\n%s", p, r)
				}
				for _, s := range secrets {
					if strings.Contains(r.all(), s) {
						t.Errorf("secret %q leaked through cat %s:\n%s", s, p, r)
					}
				}
			}
			r := e.sh("grep -r . "+dir+" 2>/dev/null; cat "+filepath.Join(dir, "sub", "deep", "plain.txt")+" "+control, bf...)
			for _, s := range secrets {
				if strings.Contains(r.all(), s) {
					t.Errorf("secret %q leaked in a recursive grep:\n%s", s, r)
				}
			}
			for _, want := range []string{"PLAIN-PUBLIC-3b1", "CONTROL-PUBLIC-3b2"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("%s was not readable beside the denied files:\n%s", want, r)
				}
			}
			h := e.sh("cat "+modFile+"; cat "+filepath.Join(dir, ".env"), "--backend", backend, "--allow-read", e.home)
			if !strings.Contains(h.stdout, "MODCACHE-PUBLIC-3b3") || strings.Contains(h.all(), "DIRENV-SECRET-3a1") || !strings.Contains(userStderr(h.stderr), "Permission denied") {
				t.Errorf("--allow-read ~: want the cargo registry's secrets.rs readable and ~/d/.env denied, got:\n%s", h)
			}
		})
	}
	// --explain says where the globs were searched.
	x := e.run(append([]string{"policy", "--explain"}, append(flags, "--", "true")...)...)
	if x.code != 0 || !strings.Contains(x.stdout, "note: relative deny globs") || !strings.Contains(x.stdout, " "+dir+" ") {
		t.Errorf("--explain does not list %s among the roots searched for deny globs:\n%s", dir, x)
	}
}

// TestGitConfigDirSecrets: git's credential store in ~/.config/git is
// denied by default, and deny globs apply inside the tool configs the
// profile makes readable (they are not caches), while the git config
// itself stays readable.
func TestGitConfigDirSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.home, ".config", "git")
	writeFile(t, filepath.Join(dir, "credentials"), "https://u:CRED-SECRET-9a1@example.com")
	writeFile(t, filepath.Join(dir, ".env"), "ENV-SECRET-9a2")
	writeFile(t, filepath.Join(dir, "config"), "[user]\n\tname = GITCONFIG-PUBLIC-9a3\n")
	for _, backend := range []string{"bwrap", "landlock"} {
		r := e.sh("cat "+filepath.Join(dir, "credentials")+" "+filepath.Join(dir, ".env")+" "+filepath.Join(dir, "config")+"; true", "--backend", backend)
		if strings.Contains(r.all(), "CRED-SECRET-9a1") || strings.Contains(r.all(), "ENV-SECRET-9a2") {
			t.Errorf("%s: a secret in ~/.config/git was readable: %s", backend, r)
		}
		if !strings.Contains(r.stdout, "GITCONFIG-PUBLIC-9a3") {
			t.Errorf("%s: ~/.config/git/config is not readable: %s", backend, r)
		}
	}
}

// TestDeniedDirHoldingDenyMatches: a denied directory inside a read or
// write path that holds files a deny glob also matches (a nested .env)
// is hidden once, as a whole: the run starts (bwrap could not make mount
// points for the nested matches inside the empty directory hiding it),
// and nothing in it is readable.
func TestDeniedDirHoldingDenyMatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	extra := filepath.Join(e.home, "extra")
	writeFile(t, filepath.Join(extra, "deep", "x", ".env"), "NESTED-SECRET-4c1")
	writeFile(t, filepath.Join(extra, "deep", "plain.txt"), "DEEP-PLAIN-4c2")
	writeFile(t, filepath.Join(extra, "top.txt"), "TOP-PUBLIC-4c3")
	for _, backend := range []string{"bwrap", "landlock"} {
		r := e.sh("cat "+filepath.Join(extra, "top.txt")+"; cat "+filepath.Join(extra, "deep", "x", ".env")+" "+filepath.Join(extra, "deep", "plain.txt")+"; true",
			"--backend", backend, "--allow-read", extra, "--deny", filepath.Join(extra, "deep"))
		if r.code != 0 || !strings.Contains(r.stdout, "TOP-PUBLIC-4c3") {
			t.Errorf("%s: the run did not start or the read path is not readable: %s", backend, r)
		}
		if strings.Contains(r.all(), "NESTED-SECRET-4c1") || strings.Contains(r.all(), "DEEP-PLAIN-4c2") {
			t.Errorf("%s: something in the denied directory was readable: %s", backend, r)
		}
	}
}
