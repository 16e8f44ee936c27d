package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestHelperMounts: from HelperMountsFrom protected paths' mounts on, the
// pins, read-only binds and placeholders leave bwrap's argv for the
// helper's spec, in bwrap's order (a git directory pinned before what is
// kept read-only in it); bwrap binds the placeholders' sources where the
// helper finds them and keeps the capabilities it needs (for an
// unprivileged user, as uid 0 with the user given back in Spec.User); a
// workspace with few keeps them all in bwrap's argv.
func TestHelperMounts(t *testing.T) {
	p, opts := testPolicy(t)
	p.Protected = policy.Protected
	pl, err := Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Spec.Mounts) != 0 || pl.Spec.User != nil || slices.Contains(pl.Argv, "--cap-add") {
		t.Fatalf("a workspace with one repository: the helper mounts %v (user %v), argv %q", pl.Spec.Mounts, pl.Spec.User, pl.Argv)
	}

	ws, st := p.Workspace, opts.StateDir
	for i := range HelperMountsFrom / 3 {
		fakeGitDir(t, filepath.Join(ws, fmt.Sprintf("r%02d", i), ".git"), "config", "hooks/pre-commit")
	}
	pl, err = Build(p, []string{"true"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ms := pl.Spec.Mounts
	if len(ms) < HelperMountsFrom {
		t.Fatalf("the helper makes %d mounts, want at least %d: %+v", len(ms), HelperMountsFrom, ms)
	}
	r3 := filepath.Join(ws, "r03", ".git")
	pin := slices.Index(ms, helperspec.Mount{Dst: r3})
	hooks := slices.Index(ms, helperspec.Mount{Dst: filepath.Join(r3, "hooks"), ReadOnly: true})
	commondir := slices.Index(ms, helperspec.Mount{Src: filepath.Join(helperspec.PlaceholderDir, commondirFile), Dst: filepath.Join(r3, "commondir"), ReadOnly: true})
	if pin < 0 || hooks < 0 || commondir < 0 || pin > hooks || pin > commondir {
		t.Errorf("mounts of %s: pin at %d, hooks at %d, commondir at %d: %+v", r3, pin, hooks, commondir, ms)
	}
	for i, m := range ms {
		for _, later := range ms[i+1:] {
			if subpath.Below(m.Dst, later.Dst) {
				t.Errorf("%s is mounted before %s, which holds it", m.Dst, later.Dst)
			}
		}
	}
	if hasSeq(pl.Argv, "--bind", r3, r3) || hasSeq(pl.Argv, "--ro-bind", filepath.Join(r3, "hooks"), filepath.Join(r3, "hooks")) {
		t.Errorf("bwrap still makes the helper's mounts: %q", pl.Argv)
	}
	src := []string{"--ro-bind", filepath.Join(st, commondirFile), filepath.Join(helperspec.PlaceholderDir, commondirFile)}
	if !hasSeq(pl.Argv, src...) || !hasSeq(pl.Argv, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_DAC_READ_SEARCH", "--cap-add", "CAP_SETPCAP") {
		t.Errorf("argv lacks %q or the capabilities: %q", src, pl.Argv)
	}
	// Each config is still a private copy, which the helper binds from
	// the copies' directory (bound by bwrap, from the descriptor after
	// theirs) after the git directory's pin, and then detaches that.
	i := slices.Index(pl.GitConfigs, filepath.Join(r3, "config"))
	cfg := slices.Index(ms, helperspec.Mount{Fd: helperspec.FdGitConfigs + i, Dst: filepath.Join(r3, "config")})
	dir := []string{"--bind-fd", fmt.Sprint(helperspec.FdGitConfigs + len(pl.GitConfigs)), helperspec.GitConfigDir}
	if i < 0 || cfg < pin || !hasSeq(pl.Argv, dir...) || !slices.Equal(pl.Spec.Detach, []string{helperspec.GitConfigDir}) {
		t.Errorf("%s/config: copy %d, mount at %d (pin at %d), detach %v, argv %q", r3, i, cfg, pin, pl.Spec.Detach, pl.Argv)
	}
	// Without copies (a library host's Wrap) the configs are kept
	// read-only, and there is no directory of copies.
	wo := pl.WithoutGitCopies()
	if hasSeq(wo.Argv, dir...) || len(wo.Spec.Detach) != 0 || !slices.Contains(wo.Spec.Mounts, helperspec.Mount{Dst: filepath.Join(r3, "config"), ReadOnly: true}) {
		t.Errorf("without copies: detach %v, mounts %+v, argv %q", wo.Spec.Detach, wo.Spec.Mounts, wo.Argv)
	}
	if !slices.Contains(pl.Spec.Mounts, helperspec.Mount{Fd: helperspec.FdGitConfigs + i, Dst: filepath.Join(r3, "config")}) {
		t.Error("WithoutGitCopies changed the plan it was given")
	}
	unprivileged := os.Getuid() != 0
	if got := pl.Spec.User != nil; got != unprivileged || hasSeq(pl.Argv, "--uid", "0", "--gid", "0") != unprivileged {
		t.Errorf("unprivileged %v: user %+v, argv %q", unprivileged, pl.Spec.User, pl.Argv)
	}
	if u := pl.Spec.User; u != nil && (u.UID != os.Getuid() || u.GID != os.Getgid()) {
		t.Errorf("the command's user is %+v, want %d/%d", u, os.Getuid(), os.Getgid())
	}
}
