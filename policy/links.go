package policy

import (
	"errors"
	"io"
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
	absent := absentByListing(paths)
	for _, q := range paths {
		if absent(q) {
			continue
		}
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

// Listing a directory answers for the paths in it at once: from
// listFrom paths in one directory (the protected names at the top of a
// home, about a hundred) it is listed once, up to maxListed names,
// instead of an lstat each.
const (
	listFrom  = 8
	maxListed = 4096
)

// absentByListing returns what reports whether a path of paths is surely
// absent: its directory, shared by listFrom paths or more, was listed
// whole and does not hold its name. Any other path is not known absent
// (it is looked up as before): a directory that cannot be listed (one
// that may be searched but not read) or holds more than maxListed names.
func absentByListing(paths []string) func(string) bool {
	count := map[string]int{}
	for _, q := range paths {
		count[filepath.Dir(q)]++
	}
	listed := map[string]map[string]bool{}
	for d, n := range count {
		if n < listFrom {
			continue
		}
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		names, err := f.Readdirnames(maxListed + 1)
		f.Close()
		if errors.Is(err, io.EOF) {
			err = nil // empty
		}
		if err != nil || len(names) > maxListed {
			continue
		}
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		listed[d] = set
	}
	return func(q string) bool {
		set, ok := listed[filepath.Dir(q)]
		return ok && !set[filepath.Base(q)]
	}
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
