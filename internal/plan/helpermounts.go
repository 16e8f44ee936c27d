package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
)

// HelperMountsFrom is the number of protected paths' mounts (directories
// pinned, paths kept read-only, placeholders) from which the helper makes
// them instead of bubblewrap (see helperMounts). bubblewrap reads the
// whole mount table after each of its mounts, so a workspace of many
// repositories, each a few mounts, cost it time quadratic in their
// number; the helper reads none, but needs a capability for them, and,
// for an unprivileged user, a user namespace of its own for the command
// (a second start of the helper). Below this number bubblewrap's mounts
// cost less (docs/performance.md has the figures).
const HelperMountsFrom = 48

// helperMounts moves, from the bwrap mounts ops (sorted, see sortOps),
// the protected paths' mounts into the helper's spec (Spec.Mounts) when
// there are at least from of them, keeping their order, and returns the
// mounts left to bwrap: the placeholders' sources among them, bound at
// helperspec.PlaceholderDir for the helper to bind from. The order of
// the two sets needs no merging: every mount the helper makes binds a
// directory onto itself with what is mounted below it (MS_REC) or is a
// placeholder, where nothing can be below, so making it after bwrap's
// mounts deeper down gives what making it before them would; and
// read-only applies to the new mount alone, as bwrap's did when nothing
// was below it yet.
func (b *bwrapBuilder) helperMounts(ops []mountOp, from int) ([]mountOp, error) {
	n := 0
	for _, m := range ops {
		if m.kind == opPin || m.kind == opReadOnly {
			n++
		}
	}
	if n < from {
		return ops, nil
	}
	var keep, sources []mountOp
	var mounts []helperspec.Mount
	for _, m := range ops {
		switch m.kind {
		case opPin:
			mounts = append(mounts, helperspec.Mount{Dst: m.dst})
		case opReadOnly:
			hm := helperspec.Mount{Dst: m.dst, ReadOnly: true}
			if m.src != m.dst {
				if filepath.Dir(m.src) != b.opts.StateDir {
					return nil, fmt.Errorf("plan: placeholder source %s outside the state directory", m.src)
				}
				hm.Src = filepath.Join(helperspec.PlaceholderDir, filepath.Base(m.src))
				s := mountOp{kind: opRead, src: m.src, dst: hm.Src}
				if !slices.Contains(sources, s) {
					sources = append(sources, s)
				}
			}
			mounts = append(mounts, hm)
		case opGitConfig:
			// The private copy comes on its descriptor, which the helper
			// matches in their directory, bound once by bwrap.
			fd, err := strconv.Atoi(m.src)
			if err != nil {
				return nil, fmt.Errorf("plan: git config copy descriptor %q", m.src)
			}
			mounts = append(mounts, helperspec.Mount{Fd: fd, Dst: m.dst})
		default:
			keep = append(keep, m)
		}
	}
	if n := len(b.plan.GitConfigs); n > 0 {
		sources = append(sources, mountOp{kind: opGitConfig, src: strconv.Itoa(helperspec.FdGitConfigs + n), dst: helperspec.GitConfigDir})
		b.detach = append(b.detach, helperspec.GitConfigDir)
	}
	// The sources go right after the helper's binary: everything at /run
	// and /run/cordon is mounted by then.
	i := slices.IndexFunc(keep, func(m mountOp) bool { return m.kind == opHelper })
	if i < 0 {
		return nil, fmt.Errorf("plan: no helper mount")
	}
	keep = slices.Insert(keep, i+1, sources...)
	b.mounts = mounts
	if uid := os.Getuid(); uid != 0 {
		// bwrap runs the helper as uid 0, the user's own, so that it may
		// mount; the helper gives the command its user back.
		b.user = &helperspec.User{UID: uid, GID: os.Getgid()}
	}
	return keep, nil
}

// helperMountArgs are bwrap's arguments for a helper that mounts
// (Spec.Mounts): the capabilities it needs for that (CAP_SYS_ADMIN, and
// CAP_DAC_READ_SEARCH to look each path up as bwrap, with all of them,
// did) and to give them all up after (CAP_SETPCAP), and, for an unprivileged user, uid and gid 0, in the user
// namespace that owns the sandbox's mounts (bwrap runs any other uid in
// a namespace of its own, which cannot mount).
func (b *bwrapBuilder) helperMountArgs() []string {
	if len(b.mounts) == 0 {
		return nil
	}
	args := []string{"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_DAC_READ_SEARCH", "--cap-add", "CAP_SETPCAP"}
	if b.user != nil {
		// CAP_SETFCAP: mapping uid 0 of the sandbox's namespace into the
		// command's requires it (user_namespaces(7)).
		args = append(args, "--cap-add", "CAP_SETFCAP", "--uid", "0", "--gid", "0")
	}
	return args
}
