package planted

import (
	"os"
	"path/filepath"
	"time"
)

// Again is b for a command that starts now: the same record, with the
// time of now, so that what the command changes or creates is taken for
// its own (see Check). It is for a caller that knows nothing b read
// changed since b was made (Reads lists what it read; a session watches
// it): the record is then what Snapshot would make now, without reading
// it again.
func (b *Before) Again() *Before {
	c := *b
	c.at = time.Now()
	return &c
}

// Reads lists the paths b was read from (absolute): every file whose
// state or content it recorded or whose absence it noted, and every
// directory whose entries it listed, so that a caller watching them all
// knows when b no longer is what Snapshot would make (see Again). ok is
// false when b recorded only part of something (a bound: more git
// directories than MaxSnapshotDirs, a hooks directory of more than its
// bound of entries, a protected directory of more than its), or is a
// Since: such a record is taken again for every run.
func (b *Before) Reads() (paths []string, ok bool) {
	if b.since || b.partial {
		return nil, false
	}
	for n := range b.names {
		paths = append(paths, n)
	}
	paths = append(paths, b.nameDirs...)
	for p := range b.nameFiles {
		paths = append(paths, p)
	}
	for p := range b.ids {
		paths = append(paths, p)
	}
	hooks := func(h string, s *dirState) bool {
		if s.hooks == nil {
			return false
		}
		paths = append(paths, h)
		for n := range s.hooks {
			paths = append(paths, filepath.Join(h, n))
		}
		return true
	}
	for d := range b.known {
		s := b.dirs[d]
		if s == nil {
			return nil, false
		}
		paths = append(paths, d)
		for _, t := range todoFiles {
			paths = append(paths, filepath.Join(d, t))
		}
		if s.keptOnly {
			// Its configs and commondir are entries of d, whose watch
			// sees them changed; its hooks were not recorded.
			continue
		}
		for _, c := range configFiles {
			paths = append(paths, filepath.Join(d, c))
		}
		paths = append(paths, filepath.Join(d, "commondir"))
		if !hooks(filepath.Join(d, "hooks"), s) {
			return nil, false
		}
	}
	for h, s := range b.gitHooks {
		if !hooks(h, s) {
			return nil, false
		}
	}
	for c := range b.gitConfigs {
		paths = append(paths, c)
	}
	for _, root := range b.venvRootsGiven {
		more, ok := venvReads(root)
		if !ok {
			return nil, false
		}
		paths = append(paths, more...)
	}
	return paths, true
}

// venvReads lists what WithVenvs reads of root (see venvRoots, venvFiles):
// the root, its top directories and where a virtual environment may lie in
// each, and each environment's watched files and the directories listed
// to find them. Read after WithVenvs, it is the same unless something
// changed in between, which the watch of the directories listed sees.
func venvReads(root string) ([]string, bool) {
	r, err := os.OpenRoot(root)
	if err != nil {
		// Absent: the directory above sees it made.
		return []string{root}, true
	}
	defer r.Close()
	paths := []string{root, filepath.Join(root, "pyvenv.cfg")}
	top, err := readRootDir(r, ".", maxVenvEntries)
	if err != nil || len(top) >= maxVenvEntries {
		return nil, false
	}
	for _, e := range top {
		if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
			continue
		}
		n := filepath.Join(root, e.Name())
		paths = append(paths, n, filepath.Join(n, "pyvenv.cfg"), filepath.Join(n, ".venv", "pyvenv.cfg"), filepath.Join(n, "venv", "pyvenv.cfg"))
		if e.Name() == ".tox" || e.Name() == ".nox" {
			ents, _ := readRootDir(r, e.Name(), 1000)
			if len(ents) >= 1000 {
				return nil, false
			}
			for _, s := range ents {
				paths = append(paths, filepath.Join(n, s.Name(), "pyvenv.cfg"))
			}
		}
	}
	for _, v := range venvRoots(r) {
		abs := filepath.Join(root, v)
		paths = append(paths, abs, filepath.Join(abs, "bin"), filepath.Join(abs, "lib"))
		for _, a := range activateScripts {
			paths = append(paths, filepath.Join(abs, "bin", a))
		}
		for _, sp := range sitePackages(r, v) {
			paths = append(paths, filepath.Join(root, sp))
		}
		for _, f := range venvFiles(r, v) {
			paths = append(paths, filepath.Join(root, f.rel))
		}
	}
	return paths, true
}
