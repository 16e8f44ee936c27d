package planted

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
)

// checkGitLooks checks where else git looks (Before.Git) as checkDir
// checks a git directory: a hooks directory's new or changed executables
// and links, and an included config file's new keys that run a program.
// Each is opened through the root of the walk it lies in; one outside
// every root is not the run's to change.
func (c *checker) checkGitLooks(w *walkResult) {
	type item struct {
		path string
		hook bool
	}
	var items []item
	for h := range c.b.gitHooks {
		items = append(items, item{h, true})
	}
	for f := range c.b.gitConfigs {
		items = append(items, item{f, false})
	}
	slices.SortFunc(items, func(x, y item) int { return cmp.Compare(x.path, y.path) })
	for _, it := range items {
		if (c.ignored(it.path) || c.kept[it.path] && c.b.gitKnown[it.path]) && c.gitLookSame(it.path) {
			continue // cordon's placeholder, or read-only during the run, and the same file still
		}
		for i, base := range w.bases {
			rel, ok := under(base, it.path)
			if !ok {
				continue
			}
			dir, name := filepath.Dir(rel), filepath.Base(rel)
			g, err := w.roots[i].OpenRoot(dir)
			if err != nil {
				break
			}
			prev := &dirState{configs: map[string]*fileState{}}
			if it.hook {
				s := c.b.gitHooks[it.path]
				prev.hooks, prev.hooksLink = s.hooks, s.hooksLink
			} else if f := c.b.gitConfigs[it.path]; f != nil {
				prev.configs[name] = f
			}
			if c.b.since {
				prev = nil // judged by when things changed
			}
			d := &dirCheck{c: c, g: g, root: w.roots[i], abs: filepath.Join(base, dir), rel: dir, prev: prev}
			if it.hook {
				d.hooks(name)
			} else {
				d.config(name)
			}
			g.Close()
			break
		}
	}
}

// gitLookSame reports whether the hooks directory or included config file
// p is the file the snapshot recorded (gitIDs): present or absent alike,
// and the same inode, size, modification and change time. A mount, or a
// placeholder, is trusted only while it is: another process that removes
// or renames the path takes the mount away (see keptEntriesChanged).
func (c *checker) gitLookSame(p string) bool {
	was, recorded := c.b.gitIDs[p]
	if !recorded {
		return true // a Before made by Since: judged by times anyway
	}
	fi, err := os.Lstat(p)
	if was == nil || err != nil {
		return was == nil && err != nil
	}
	return was.same(fi)
}
