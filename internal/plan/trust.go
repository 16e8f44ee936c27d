package plan

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// keptReadOnly lists the git directories, protected names and places
// where else git looks (Guard.Git) of the plan's Guard that its final
// mounts (b.ops) keep read-only: a name whose
// nearest mount, at it or above it, is read-only with nothing writable
// mounted below it; a git directory that protect went through and each of
// whose entries through which git finds configuration or hooks
// (policy.GitDirProtected) is such a path, where it exists or a
// placeholder is mounted. The check after the run trusts only these
// (Guard.KeptReadOnly): whatever else it finds changed is the command's.
func (b *bwrapBuilder) keptReadOnly() []string {
	m := newMountTable(b.ops)
	var out []string
	for _, g := range b.plan.Guard.GitDirs {
		if !b.gitProtected[g] {
			continue
		}
		kept := true
		for _, e := range policy.GitDirProtected {
			p := filepath.Join(g, strings.TrimSuffix(e, "/"))
			if _, mounted := m.ro[p]; !mounted {
				if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
					continue // absent, and protect saw no need to keep it so
				}
			}
			if !m.readOnly(p) {
				kept = false
				break
			}
		}
		if kept {
			out = append(out, g)
		}
	}
	for _, n := range b.plan.Guard.Names {
		if m.readOnly(n) {
			out = append(out, n)
		}
	}
	// Where else git looks (Guard.Git): a hooks directory or an included
	// config file the mounts keep read-only.
	for _, g := range [][]string{b.plan.Guard.Git.Hooks, b.plan.Guard.Git.Configs} {
		for _, p := range g {
			if m.readOnly(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// mountTable is what a sorted list of mounts leaves at each destination:
// whether it is read-only.
type mountTable struct {
	ro map[string]bool
	// writable are the writable destinations, sorted.
	writable []string
}

func newMountTable(ops []mountOp) mountTable {
	t := mountTable{ro: make(map[string]bool, len(ops))}
	for _, o := range ops {
		switch o.kind {
		case opRead, opReadOnly, opMask, opMaskDir, opHelper, opRemountRO, opGitConfig:
			// (A config bound from its copy: the host's file is out of
			// the command's reach.)
			t.ro[o.dst] = true
		case opTmpfs, opWrite, opPin:
			t.ro[o.dst] = false
		}
	}
	for d, ro := range t.ro {
		if !ro {
			t.writable = append(t.writable, d)
		}
	}
	slices.Sort(t.writable)
	return t
}

// readOnly reports whether path lies in a read-only mount (the nearest
// one at or above it) with no writable mount below it.
func (t mountTable) readOnly(path string) bool {
	path = filepath.Clean(path)
	for q := path; ; q = filepath.Dir(q) {
		if ro, ok := t.ro[q]; ok {
			if !ro {
				return false
			}
			break
		}
		if q == "/" || q == "." {
			return false // nothing mounted above it: the host's own
		}
	}
	// A writable mount strictly below path sorts right after path+"/".
	below := path + "/"
	i, _ := slices.BinarySearch(t.writable, below)
	return i == len(t.writable) || !strings.HasPrefix(t.writable[i], below)
}
