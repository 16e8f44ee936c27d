package policy

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// LinkTargets returns what the symbolic links among paths name inside the
// trees within: a protected path that is a link (an .envrc -> tools/envrc,
// ~/.bashrc -> a dotfiles workspace's bashrc) is written by writing its
// target, so whatever keeps the path from being written must keep the
// target too (bubblewrap binds it read-only, the Landlock-only backend's
// supervisor and the file tools refuse it). Paths that are no link, or
// whose target lies outside within or cannot be resolved, give nothing.
func LinkTargets(paths, within []string) []string {
	var out []string
	for _, q := range paths {
		if fi, err := os.Lstat(q); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		t, err := filepath.EvalSymlinks(q)
		if err != nil || !CoveredBy(t, within) || slices.Contains(out, t) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// ProtectedAt lists the protected names (ProtectedNames) at the top of dir
// and the policy's absolute deny_write entries: the protected paths whose
// link targets LinkTargets finds without a walk.
func (p *Policy) ProtectedAt(dir string) []string {
	var out []string
	if dir != "" && dir != "/" {
		for _, n := range ProtectedNames {
			out = append(out, filepath.Join(dir, filepath.FromSlash(n)))
		}
	}
	for _, d := range p.DenyWrite {
		if filepath.IsAbs(d) && !IsGlob(d) {
			out = append(out, d)
		}
	}
	return out
}
