package plan

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// MaxGitConfigs bounds the configs given a private copy (a monorepo with
// many submodules): the rest stay read-only, and git's writes of them are
// refused.
const MaxGitConfigs = 64

// copyGitConfigs turns each final read-only bind of an existing git
// directory's config (a regular file bound onto itself, not a placeholder
// or a symbolic link's target) into a writable bind of its private copy
// (opGitConfig, Plan.GitConfigs), at most MaxGitConfigs. The host's file
// stays out of the command's reach.
func (b *bwrapBuilder) copyGitConfigs() {
	for i, m := range b.ops {
		if len(b.plan.GitConfigs) == MaxGitConfigs {
			return
		}
		if m.kind != opReadOnly || m.src != m.dst || filepath.Base(m.dst) != "config" || !b.gitProtected[filepath.Dir(m.dst)] {
			continue
		}
		if fi, err := os.Lstat(m.dst); err != nil || fi.Mode().Type() != fs.FileMode(0) {
			continue
		}
		fd := helperspec.FdGitConfigs + len(b.plan.GitConfigs)
		b.ops[i] = mountOp{kind: opGitConfig, src: strconv.Itoa(fd), dst: m.dst}
		b.plan.GitConfigs = append(b.plan.GitConfigs, m.dst)
	}
}

// WithoutGitCopies returns pl with each config of GitConfigs bound
// read-only from the host's file again, as without copies: for a launcher
// that cannot perform git's rename into a copy (launch.Wrap, whose caller
// waits for the command itself). pl itself is not changed.
func (pl *Plan) WithoutGitCopies() *Plan {
	if len(pl.GitConfigs) == 0 {
		return pl
	}
	out := *pl
	out.GitConfigs = nil
	out.Argv = slices.Clone(pl.Argv)
	fds := map[string]bool{}
	for i := range pl.GitConfigs {
		fds[strconv.Itoa(helperspec.FdGitConfigs+i)] = true
	}
	for i := 0; i+2 < len(out.Argv); i++ {
		if a := out.Argv; a[i] == "--" {
			break
		} else if a[i] == "--bind-fd" && fds[a[i+1]] {
			a[i], a[i+1] = "--ro-bind", a[i+2]
		} else if a[i] == "--bind-fd" && a[i+2] == helperspec.GitConfigDir {
			// The copies' directory, for the helper's mounts.
			out.Argv = slices.Delete(out.Argv, i, i+3)
			i--
		}
	}
	if len(pl.Spec.Mounts) > 0 {
		out.Spec.Mounts = slices.Clone(pl.Spec.Mounts)
		for i, m := range out.Spec.Mounts {
			if m.Fd != 0 {
				out.Spec.Mounts[i] = helperspec.Mount{Dst: m.Dst, ReadOnly: true}
			}
		}
		out.Spec.Detach = slices.DeleteFunc(slices.Clone(pl.Spec.Detach), func(d string) bool { return d == helperspec.GitConfigDir })
	}
	return &out
}

// Exposes reports whether a bubblewrap plan binds into the sandbox a host
// path at or below dir, or one holding it (its Argv up to the command):
// a directory of the launcher's own there would be reachable from inside.
func (pl *Plan) Exposes(dir string) bool {
	for i := 0; i+2 < len(pl.Argv); i++ {
		switch pl.Argv[i] {
		case "--":
			return false
		case "--bind", "--ro-bind", "--dev-bind", "--bind-try", "--ro-bind-try", "--dev-bind-try":
			if src := pl.Argv[i+1]; subpath.Within(dir, src) || subpath.Within(src, dir) {
				return true
			}
			i += 2
		}
	}
	return false
}
