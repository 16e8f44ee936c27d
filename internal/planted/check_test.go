package planted

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/parallel"
)

// newWorkspace returns a fresh workspace directory (symbolic links
// resolved, as the launcher passes them).
func newWorkspace(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// fakeGitDir makes a minimal git directory (HEAD and objects/) at dir.
func fakeGitDir(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "objects"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "hooks"), 0o755))
	write(t, filepath.Join(dir, "HEAD"), "ref: refs/heads/main\n", 0o644)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), mode))
	must(t, os.Chmod(p, mode))
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode()
}

// summary is a finding as "kind rel key disarmed".
func summary(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %s %s %v", f.Kind, f.Rel, f.Key, f.Disarmed))
	}
	return out
}

// snapshotOf snapshots ws's git directories and names the way the plan
// would list them.
func snapshotOf(t *testing.T, ws string) *Before {
	t.Helper()
	dirs, names, note := discover([]string{ws}, Limits{})
	if note != "" {
		t.Fatalf("Discover: %s", note)
	}
	return Snapshot(dirs, names)
}

func TestCheckHooks(t *testing.T) {
	tests := []struct {
		name  string
		keep  bool
		plant func(t *testing.T, git string)
		want  []string
		check func(t *testing.T, git string)
	}{
		{
			name: "executable hook disarmed",
			plant: func(t *testing.T, git string) {
				write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\necho x\n", 0o755)
			},
			want: []string{"hook .git/hooks/pre-commit pre-commit true"},
			check: func(t *testing.T, git string) {
				h := filepath.Join(git, "hooks", "pre-commit")
				if m := mode(t, h); m.Perm() != 0o644 {
					t.Errorf("hook mode %v, want 0644", m)
				}
				if read(t, h) != "#!/bin/sh\necho x\n" {
					t.Error("hook content changed")
				}
				note := read(t, h+DisarmedSuffix)
				if !strings.Contains(note, "chmod +x") || mode(t, h+DisarmedSuffix).Perm() != 0o644 {
					t.Errorf("note: %v %q", mode(t, h+DisarmedSuffix), note)
				}
			},
		},
		{
			name: "kept armed",
			keep: true,
			plant: func(t *testing.T, git string) {
				write(t, filepath.Join(git, "hooks", "pre-push"), "#!/bin/sh\n", 0o700)
			},
			want: []string{"hook .git/hooks/pre-push pre-push false"},
			check: func(t *testing.T, git string) {
				if m := mode(t, filepath.Join(git, "hooks", "pre-push")); m.Perm() != 0o700 {
					t.Errorf("kept hook mode %v", m)
				}
				if _, err := os.Lstat(filepath.Join(git, "hooks", "pre-push"+DisarmedSuffix)); err == nil {
					t.Error("a note was written with KeepArmed")
				}
			},
		},
		{
			name: "symbolic link renamed, its target untouched",
			plant: func(t *testing.T, git string) {
				target := filepath.Join(filepath.Dir(git), "user-script")
				write(t, target, "#!/bin/sh\n", 0o755)
				must(t, os.Symlink(target, filepath.Join(git, "hooks", "post-checkout")))
			},
			want: []string{"hook .git/hooks/post-checkout post-checkout true"},
			check: func(t *testing.T, git string) {
				if _, err := os.Lstat(filepath.Join(git, "hooks", "post-checkout")); err == nil {
					t.Error("link still in place")
				}
				if m := mode(t, filepath.Join(git, "hooks", "post-checkout"+DisarmedSuffix)); m&os.ModeSymlink == 0 {
					t.Errorf("renamed link is %v", m)
				}
				if m := mode(t, filepath.Join(filepath.Dir(git), "user-script")); m.Perm() != 0o755 {
					t.Errorf("link target chmodded: %v", m)
				}
			},
		},
		{
			name: "samples and non-executable files ignored",
			plant: func(t *testing.T, git string) {
				write(t, filepath.Join(git, "hooks", "pre-commit.sample"), "#!/bin/sh\n", 0o755)
				write(t, filepath.Join(git, "hooks", "pre-rebase"), "#!/bin/sh\n", 0o644)
			},
		},
		{
			name: "hooks directory replaced by a link",
			plant: func(t *testing.T, git string) {
				must(t, os.RemoveAll(filepath.Join(git, "hooks")))
				must(t, os.Symlink("/usr/share", filepath.Join(git, "hooks")))
			},
			want: []string{"hook .git/hooks hooks true"},
		},
		{
			name: "user hook changed by the run",
			plant: func(t *testing.T, git string) {
				write(t, filepath.Join(git, "hooks", "commit-msg"), "#!/bin/sh\necho changed\n", 0o755)
			},
			want: []string{"hook .git/hooks/commit-msg commit-msg true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			git := filepath.Join(ws, ".git")
			fakeGitDir(t, git)
			user := filepath.Join(git, "hooks", "commit-msg")
			write(t, user, "#!/bin/sh\necho user\n", 0o755)
			b := snapshotOf(t, ws)
			tt.plant(t, git)
			rep, err := b.Check([]string{ws}, Options{KeepArmed: tt.keep})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(rep); !slices.Equal(got, tt.want) {
				t.Errorf("findings %q, want %q", got, tt.want)
			}
			if rep.Incomplete != "" {
				t.Errorf("Incomplete: %s", rep.Incomplete)
			}
			if tt.check != nil {
				tt.check(t, git)
			}
			if !strings.Contains(tt.name, "user hook") && !strings.Contains(tt.name, "replaced") && mode(t, user).Perm() != 0o755 {
				t.Error("the user's own hook was touched")
			}
		})
	}
}

func TestCheckConfigAndCommondir(t *testing.T) {
	userConfig := "[core]\n\tfsmonitor = user-monitor\n[alias]\n\tst = !git status\n"
	tests := []struct {
		name       string
		plant      func(t *testing.T, ws string)
		want       []string
		wantConfig string // of .git/config, if set
	}{
		{
			name: "user keys kept, new key commented out",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "config"), userConfig+"[diff \"x\"]\n\ttextconv = evil\n", 0o644)
			},
			want:       []string{"config .git/config diff.x.textconv true"},
			wantConfig: userConfig + "[diff \"x\"]\n# cordon-disarmed: \ttextconv = evil\n",
		},
		{
			name: "changed value of a user key",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "config"), strings.Replace(userConfig, "user-monitor", "evil", 1), 0o644)
			},
			want:       []string{"config .git/config core.fsmonitor true"},
			wantConfig: strings.Replace(userConfig, "\tfsmonitor = user-monitor", "# cordon-disarmed: \tfsmonitor = evil", 1),
		},
		{
			name: "harmless change",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "config"), userConfig+"[user]\n\tname = x\n", 0o644)
			},
			wantConfig: userConfig + "[user]\n\tname = x\n",
		},
		{
			name: "new config.worktree",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "config.worktree"), "[core]\n\tsshCommand = evil\n", 0o600)
			},
			want: []string{"config .git/config.worktree core.sshcommand true"},
		},
		{
			name: "commondir planted",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "commondir"), "../elsewhere\n", 0o644)
			},
			want: []string{"commondir .git/commondir commondir true"},
		},
		{
			name: "placeholder commondir ignored",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".git", "commondir"), ".\n", 0o644)
			},
		},
		{
			name: "new worktree pointing at its repository",
			plant: func(t *testing.T, ws string) {
				wt := filepath.Join(ws, ".git", "worktrees", "w")
				write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/w\n", 0o644)
				write(t, filepath.Join(wt, "commondir"), "../..\n", 0o644)
			},
		},
		{
			name: "new worktree pointing elsewhere",
			plant: func(t *testing.T, ws string) {
				wt := filepath.Join(ws, ".git", "worktrees", "w")
				write(t, filepath.Join(wt, "HEAD"), "ref: refs/heads/w\n", 0o644)
				write(t, filepath.Join(wt, "commondir"), "../../../evil\n", 0o644)
			},
			want: []string{"commondir .git/worktrees/w/commondir commondir true"},
		},
		{
			name: "nested repository through a gitlink",
			plant: func(t *testing.T, ws string) {
				fakeGitDir(t, filepath.Join(ws, "vendor", "mod.git"))
				write(t, filepath.Join(ws, "vendor", "mod.git", "config"), "[core]\n\tpager = evil\n", 0o644)
				write(t, filepath.Join(ws, "sub", ".git"), "gitdir: ../vendor/mod.git\n", 0o644)
			},
			want: []string{"config vendor/mod.git/config core.pager true"},
		},
		{
			name: "protected names",
			plant: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, "a", ".envrc"), "evil\n", 0o644)
				write(t, filepath.Join(ws, ".vscode", "tasks.json"), "{}\n", 0o644)
				write(t, filepath.Join(ws, "b", ".bashrc"), "evil\n", 0o644)
			},
			want: []string{"name .vscode .vscode true", "name a/.envrc .envrc true", "name b/.bashrc .bashrc false"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := newWorkspace(t)
			fakeGitDir(t, filepath.Join(ws, ".git"))
			write(t, filepath.Join(ws, ".git", "config"), userConfig, 0o644)
			write(t, filepath.Join(ws, ".envrc"), "user\n", 0o644)
			b := snapshotOf(t, ws)
			tt.plant(t, ws)
			rep, err := b.Check([]string{ws}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(rep); !slices.Equal(got, tt.want) {
				t.Errorf("findings %q, want %q", got, tt.want)
			}
			if tt.wantConfig != "" {
				if got := read(t, filepath.Join(ws, ".git", "config")); got != tt.wantConfig {
					t.Errorf("config:\n got %q\nwant %q", got, tt.wantConfig)
				}
			}
			if read(t, filepath.Join(ws, ".envrc")) != "user\n" {
				t.Error("the user's .envrc was touched")
			}
			for _, f := range rep.Findings {
				if f.Disarmed && (f.Kind == KindCommondir || f.Kind == KindName) {
					if _, err := os.Lstat(f.Path + DisarmedSuffix); err != nil {
						t.Errorf("%s not renamed: %v", f.Path, err)
					}
				}
			}
			// A second check finds nothing more: what was disarmed stays so.
			again, err := Snapshot(nil, nil).Check(nil, Options{})
			if err != nil || len(again.Findings) != 0 {
				t.Errorf("empty check: %v %v", again, err)
			}
		})
	}
}

// TestCheckUnknownOldFiles: a git directory the snapshot did not list
// (the plan's walk missed it) whose files predate the run is the user's.
func TestCheckUnknownOldFiles(t *testing.T) {
	ws := newWorkspace(t)
	git := filepath.Join(ws, "old", ".git")
	fakeGitDir(t, git)
	write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
	write(t, filepath.Join(git, "config"), "[core]\n\tfsmonitor = x\n", 0o644)
	b := Snapshot(nil, nil)
	b.at = b.at.Add(5 * ctimeSlack) // as if the run started later
	rep, err := b.Check([]string{ws}, Options{})
	if err != nil || len(rep.Findings) != 0 {
		t.Errorf("findings in an old unknown repository: %q %v", summary(rep), err)
	}
}

// TestCheckIgnore: cordon's own placeholders, and what lies below them,
// are not reported.
func TestCheckIgnore(t *testing.T) {
	ws := newWorkspace(t)
	b := Snapshot(nil, nil)
	write(t, filepath.Join(ws, ".envrc"), "", 0o644)
	write(t, filepath.Join(ws, "ph", ".vscode", "x"), "", 0o644)
	fakeGitDir(t, filepath.Join(ws, "ph", "repo"))
	write(t, filepath.Join(ws, "ph", "repo", "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
	rep, err := b.Check([]string{ws}, Options{Ignore: []string{filepath.Join(ws, ".envrc"), filepath.Join(ws, "ph")}})
	if err != nil || len(rep.Findings) != 0 {
		t.Errorf("findings under ignored paths: %q %v", summary(rep), err)
	}
}

func TestCheckBound(t *testing.T) {
	ws := newWorkspace(t)
	for i := range 50 {
		must(t, os.MkdirAll(filepath.Join(ws, fmt.Sprintf("d%02d", i), "e"), 0o755))
	}
	fakeGitDir(t, filepath.Join(ws, ".git"))
	b := snapshotOf(t, ws)
	write(t, filepath.Join(ws, ".git", "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
	rep, err := b.Check([]string{ws}, Options{Limits: Limits{MaxEntries: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Incomplete, "stopped at its bound") || !strings.Contains(rep.Incomplete, "MaxEntries") {
		t.Errorf("Incomplete = %q", rep.Incomplete)
	}
	// The git directory that existed is still checked.
	if got := summary(rep); !slices.Equal(got, []string{"hook .git/hooks/pre-commit pre-commit true"}) {
		t.Errorf("findings %q", got)
	}
	if _, _, note := discover([]string{ws}, Limits{MaxEntries: 10}); note == "" {
		t.Error("Discover over its bound said nothing")
	}
}

// gitCmd runs git in dir with a fake home and no system or global config.
func gitCmd(t *testing.T, home, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRealGit plants a pre-commit hook and core.fsmonitor in a repository
// created after the snapshot, and checks that git runs neither once Check
// has disarmed them, while the user's own repository keeps its hook and
// fsmonitor.
func TestRealGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			base := newWorkspace(t)
			home, ws, marks := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "marks")
			for _, d := range []string{home, ws, marks} {
				must(t, os.MkdirAll(d, 0o755))
			}
			git := func(dir string, args ...string) string {
				t.Helper()
				out, err := gitCmd(t, home, dir, args...)
				if err != nil {
					t.Fatalf("git %q: %v\n%s", args, err, out)
				}
				return out
			}
			plant := func(repo, tag string) {
				write(t, filepath.Join(repo, ".git", "hooks", "pre-commit"),
					fmt.Sprintf("#!/bin/sh\necho HOOK-RAN >> %s/%s-hook\n", marks, tag), 0o755)
				git(repo, "config", "core.fsmonitor", fmt.Sprintf("echo FSMON >> %s/%s-fsmon; false", marks, tag))
			}
			// The user's repository, armed before the run.
			userRepo := filepath.Join(ws, "user")
			git(ws, "init", "-q", "user")
			plant(userRepo, "user")
			b := snapshotOf(t, ws)

			// The run: a new repository with a hook and fsmonitor.
			newRepo := filepath.Join(ws, "new")
			git(ws, "init", "-q", "new")
			write(t, filepath.Join(newRepo, "f"), "x\n", 0o644)
			git(newRepo, "add", "f")
			git(newRepo, "commit", "-q", "-m", "one")
			plant(newRepo, "new")
			// Armed, git would run both.
			git(newRepo, "status", "--short")
			for _, m := range []string{"new-fsmon"} {
				if _, err := os.Stat(filepath.Join(marks, m)); err != nil {
					t.Fatalf("the planted fsmonitor did not run before Check (test is void): %v", err)
				}
			}
			must(t, os.Remove(filepath.Join(marks, "new-fsmon")))

			rep, err := b.Check([]string{ws}, Options{KeepArmed: keep})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				fmt.Sprintf("config new/.git/config core.fsmonitor %v", !keep),
				fmt.Sprintf("hook new/.git/hooks/pre-commit pre-commit %v", !keep),
			}
			if got := summary(rep); !slices.Equal(got, want) {
				t.Fatalf("findings %q, want %q", got, want)
			}
			for _, f := range rep.Findings {
				w := f.Warning()
				if !strings.HasPrefix(w, "planted git ") || keep == strings.Contains(w, "disarmed (") {
					t.Errorf("warning %q", w)
				}
			}
			write(t, filepath.Join(newRepo, "g"), "y\n", 0o644)
			git(newRepo, "status", "--short")
			git(newRepo, "add", "g")
			out, err := gitCmd(t, home, newRepo, "commit", "-q", "-m", "two")
			ran := []string{}
			for _, m := range []string{"new-hook", "new-fsmon"} {
				if _, err := os.Stat(filepath.Join(marks, m)); err == nil {
					ran = append(ran, m)
				}
			}
			if keep {
				if len(ran) == 0 {
					t.Errorf("with KeepArmed nothing ran: files were changed (commit: %v %s)", err, out)
				}
				if m := mode(t, filepath.Join(newRepo, ".git", "hooks", "pre-commit")); m.Perm()&0o111 == 0 {
					t.Error("KeepArmed: the hook lost its execute bits")
				}
			} else if len(ran) > 0 || err != nil {
				t.Errorf("after Check git still ran %q (commit: %v %s)", ran, err, out)
			}
			// The user's own repository is untouched and still armed.
			if m := mode(t, filepath.Join(userRepo, ".git", "hooks", "pre-commit")); m.Perm()&0o111 == 0 {
				t.Error("the user's hook was disarmed")
			}
			if got := git(userRepo, "config", "core.fsmonitor"); !strings.Contains(got, "user-fsmon") {
				t.Errorf("the user's fsmonitor changed: %q", got)
			}
		})
	}
}

// TestCheckChangedNames: where no mount kept them read-only (the
// Landlock-only backend), files of existing protected names that the run
// changed or added are reported and renamed aside; unchanged ones and the
// user's other files are not touched.
func TestCheckChangedNames(t *testing.T) {
	ws := newWorkspace(t)
	write(t, filepath.Join(ws, ".envrc"), "user\n", 0o644)
	write(t, filepath.Join(ws, ".vscode", "settings.json"), "{}\n", 0o644)
	write(t, filepath.Join(ws, "sub", ".envrc"), "untouched\n", 0o644)
	b := snapshotOf(t, ws)
	write(t, filepath.Join(ws, ".envrc"), "user\nexport EVIL=1\n", 0o644)
	write(t, filepath.Join(ws, ".vscode", "tasks.json"), `{"runOn":"folderOpen"}`, 0o644)
	rep, err := b.Check([]string{ws}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"name .envrc .envrc true", "name .vscode/tasks.json .vscode true"}
	if got := summary(rep); !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	for _, p := range []string{".envrc.cordon-disarmed", ".vscode/tasks.json.cordon-disarmed", ".vscode/settings.json", "sub/.envrc"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestCheckUnreadableDir: a directory the run made unreadable (two
// levels, one inside the other) gets its owner's read and search
// permission back, is searched (the repository planted inside is
// disarmed) and is reported once, accurately; nothing is renamed, so a
// later check says nothing. With KeepArmed it is left as it is and said
// not to be searched.
func TestCheckUnreadableDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-000 directory: nothing is hidden from it")
	}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			ws := newWorkspace(t)
			hidden, inner := filepath.Join(ws, "hidden"), filepath.Join(ws, "hidden", "in")
			b := snapshotOf(t, ws)
			fakeGitDir(t, filepath.Join(inner, ".git"))
			write(t, filepath.Join(inner, ".git", "config"), "[core]\n\tfsmonitor = touch pwned\n", 0o644)
			must(t, os.Chmod(inner, 0o311))
			must(t, os.Chmod(hidden, 0o311))
			t.Cleanup(func() { os.Chmod(hidden, 0o755); os.Chmod(inner, 0o755) })
			rep, err := b.Check([]string{ws}, Options{KeepArmed: keep})
			if err != nil {
				t.Fatal(err)
			}
			if keep {
				if !strings.Contains(rep.Incomplete, hidden+" was made unreadable during the run (mode 0311) and was not searched") || len(rep.Restored) != 0 {
					t.Errorf("Incomplete = %q, Restored = %q", rep.Incomplete, rep.Restored)
				}
				return
			}
			want := []string{
				"the run made " + hidden + " unreadable (mode 0311): its owner's read and search permission was given back (mode 0711), and it was checked",
				"the run made " + inner + " unreadable (mode 0311): its owner's read and search permission was given back (mode 0711), and it was checked",
			}
			if !slices.Equal(rep.Restored, want) || rep.Incomplete != "" {
				t.Errorf("Restored = %q, Incomplete = %q", rep.Restored, rep.Incomplete)
			}
			if got := summary(rep); !slices.Equal(got, []string{"config hidden/in/.git/config core.fsmonitor true"}) {
				t.Errorf("findings %q", got)
			}
			for _, d := range []string{hidden, inner} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o711 {
					t.Errorf("%s: %v %v", d, fi.Mode(), err)
				}
			}
			if _, err := os.Lstat(hidden + DisarmedSuffix); err == nil {
				t.Error("renamed aside")
			}
			time.Sleep(ctimeSlack + 100*time.Millisecond)
			b = snapshotOf(t, ws)
			if rep, err := b.Check([]string{ws}, Options{}); err != nil || len(rep.Restored)+len(rep.Findings) != 0 || rep.Incomplete != "" {
				t.Errorf("a later check: %v %q %q %q", err, rep.Restored, summary(rep), rep.Incomplete)
			}
		})
	}
}

// TestCheckAssembledAcrossRuns: one run leaves the pieces of a git
// directory that is not one yet (config with a planted key, HEAD.lock,
// objects.tmp), a later run renames them into place. The later run's check
// takes the directory that became a git directory for the run's, whatever
// the age of its config.
func TestCheckAssembledAcrossRuns(t *testing.T) {
	ws := newWorkspace(t)
	st := filepath.Join(ws, "sub", ".stash")
	b := snapshotOf(t, ws)
	write(t, filepath.Join(st, "config"), "[core]\n\tfsmonitor = touch pwned\n", 0o644)
	write(t, filepath.Join(st, "HEAD.lock"), "ref: refs/heads/main\n", 0o644)
	must(t, os.MkdirAll(filepath.Join(st, "objects.tmp"), 0o755))
	must(t, os.MkdirAll(filepath.Join(st, "refs"), 0o755))
	write(t, filepath.Join(ws, "sub", ".git"), "gitdir: .stash\n", 0o644)
	if rep, err := b.Check([]string{ws}, Options{}); err != nil || len(rep.Findings) != 0 {
		t.Fatalf("first run: %v %q", err, summary(rep))
	}
	time.Sleep(ctimeSlack + 100*time.Millisecond) // the pieces are now old
	b = snapshotOf(t, ws)
	must(t, os.Rename(filepath.Join(st, "HEAD.lock"), filepath.Join(st, "HEAD")))
	must(t, os.Rename(filepath.Join(st, "objects.tmp"), filepath.Join(st, "objects")))
	rep, err := b.Check([]string{ws}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(rep); !slices.Equal(got, []string{"config sub/.stash/config core.fsmonitor true"}) {
		t.Errorf("second run's findings %q", got)
	}
}

// TestCheckIncompleteGitDir: a directory named .git that git does not
// accept yet (a HEAD but no objects, or not even a HEAD) is checked as a
// git directory, as the plan protects it: a hook the run put there is
// disarmed at once, before a later run completes the directory (which
// then finds it recorded) or the user's git init keeps it; one that was
// there before the run is left alone; and a later run finds the
// completed directory as it was recorded.
func TestCheckIncompleteGitDir(t *testing.T) {
	ws := newWorkspace(t)
	old := filepath.Join(ws, "old", ".git")
	write(t, filepath.Join(old, "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
	b := snapshotOf(t, ws)
	b.at = b.at.Add(5 * ctimeSlack) // as if the run started later: old/.git is the user's
	write(t, filepath.Join(ws, "sub", ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	write(t, filepath.Join(ws, "sub", ".git", "hooks", "pre-commit"), "#!/bin/sh\ntouch pwned\n", 0o755)
	write(t, filepath.Join(ws, "bare", ".git", "hooks", "post-checkout"), "#!/bin/sh\ntouch pwned\n", 0o755)
	b.at = time.Now().Add(-ctimeSlack / 2)
	rep, err := b.Check([]string{ws}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hook bare/.git/hooks/post-checkout post-checkout true", "hook sub/.git/hooks/pre-commit pre-commit true"}
	if got := summary(rep); !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	for _, p := range []string{"sub/.git/hooks/pre-commit", "bare/.git/hooks/post-checkout"} {
		if m := mode(t, filepath.Join(ws, p)); m&0o111 != 0 {
			t.Errorf("%s is still executable (%v)", p, m)
		}
	}
	if m := mode(t, filepath.Join(old, "hooks", "pre-commit")); m&0o111 == 0 {
		t.Errorf("the user's hook in an incomplete .git was disarmed (%v)", m)
	}
	// A later run completes sub/.git: nothing new is planted, nothing
	// is reported.
	time.Sleep(ctimeSlack + 100*time.Millisecond)
	b = snapshotOf(t, ws)
	must(t, os.MkdirAll(filepath.Join(ws, "sub", ".git", "objects"), 0o755))
	must(t, os.MkdirAll(filepath.Join(ws, "sub", ".git", "refs"), 0o755))
	if rep, err := b.Check([]string{ws}, Options{}); err != nil || len(rep.Findings) != 0 {
		t.Errorf("the run that completed the directory: %v %q", err, summary(rep))
	}
}

// TestCheckManyGitDirs: with more git directories than parallel.From
// (checked in two goroutines), every planted hook is found and disarmed,
// including in a directory that became a git directory during the run, the
// findings come in path order, and none is reported twice (run with
// -race: each directory's checker is its own).
func TestCheckManyGitDirs(t *testing.T) {
	ws := newWorkspace(t)
	const n = parallel.From + 9
	for i := range n {
		fakeGitDir(t, filepath.Join(ws, fmt.Sprintf("r%02d", i), ".git"))
	}
	b := snapshotOf(t, ws)
	var want []string
	for _, i := range []int{0, 1, 17, n - 2, n - 1} {
		write(t, filepath.Join(ws, fmt.Sprintf("r%02d", i), ".git", "hooks", "pre-commit"), "#!/bin/sh\n", 0o755)
		want = append(want, fmt.Sprintf("hook r%02d/.git/hooks/pre-commit pre-commit true", i))
	}
	fresh := filepath.Join(ws, "zz-new", ".git")
	fakeGitDir(t, fresh)
	write(t, filepath.Join(fresh, "hooks", "post-checkout"), "#!/bin/sh\n", 0o755)
	want = append(want, "hook zz-new/.git/hooks/post-checkout post-checkout true")
	rep, err := b.Check([]string{ws}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(rep); !slices.Equal(got, want) {
		t.Errorf("findings\n%q\nwant\n%q", got, want)
	}
	if rep.Incomplete != "" {
		t.Errorf("Incomplete: %s", rep.Incomplete)
	}
	for _, i := range []int{0, n - 1} {
		if m := mode(t, filepath.Join(ws, fmt.Sprintf("r%02d", i), ".git", "hooks", "pre-commit")); m.Perm()&0o111 != 0 {
			t.Errorf("r%02d's hook is still executable: %v", i, m)
		}
	}
}
