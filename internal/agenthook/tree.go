package agenthook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/policy"
)

// maxTreeEntries bounds the entries decideTree looks at: a search of a
// larger tree is refused (fail closed), with the advice to narrow it.
const maxTreeEntries = 200_000

var errTreeTooLarge = errors.New("too many entries")

// decideTree decides a search of the contents of every file below p (a
// Grep): each entry below every directory p may reach, and below every
// directory a symbolic link in it reaches (a search may follow links),
// each link by its target too. The first denied entry refuses the whole
// search, naming that entry: a search tool prints the lines it matches,
// so one secret below a directory the policy shows (a .env in the
// workspace) would leak through it. p itself was decided by decidePath.
func (c *call) decideTree(p string) (*denial, error) {
	cs, err := candidates(c.cwd, p, c.env.Home)
	if err != nil {
		return &denial{fmt.Sprintf("cordon: searching %s refused: %s", p, oneLine(err.Error()))}, nil
	}
	w := &treeWalk{c: c, given: p, seen: map[string]bool{}}
	for _, root := range cs {
		if err := w.walk(root); err != nil {
			if errors.Is(err, errTreeTooLarge) {
				return &denial{fmt.Sprintf("cordon: searching %s refused: more than %d entries to check against the sandbox policy; search a narrower path, or search with the shell, which runs confined", p, maxTreeEntries)}, nil
			}
			return nil, err
		}
		if w.found != nil {
			return w.found, nil
		}
	}
	return nil, nil
}

// treeWalk is one decideTree: the entries counted, the directories
// walked (by resolved path), the first denial.
type treeWalk struct {
	c     *call
	given string
	n     int
	seen  map[string]bool
	found *denial
}

// walk decides every entry below root when root is a directory not yet
// walked.
func (w *treeWalk) walk(root string) error {
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() || w.seen[root] {
		return nil // a file was decided by decidePath; a missing path finds nothing
	}
	w.seen[root] = true
	var links []string
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // what the walk cannot read, the search cannot either
		}
		if w.n++; w.n > maxTreeEntries {
			return errTreeTooLarge
		}
		check := []string{path}
		if e.Type()&fs.ModeSymlink != 0 {
			real, err := resolve(path)
			if err != nil {
				w.found = &denial{fmt.Sprintf("cordon: searching %s refused: %s does not resolve: %s", w.given, path, oneLine(err.Error()))}
				return fs.SkipAll
			}
			check = append(check, real)
			links = append(links, real)
		}
		for _, q := range check {
			if dec := w.c.decider.DecideHost(policy.OpRead, q); dec.Denied {
				w.found = &denial{reason("searching", w.given+" (it holds "+q+")", dec, w.c.env.Home) +
					"; search a narrower path, or search with the shell, which runs confined and does not see it"}
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil || w.found != nil {
		return err
	}
	for _, l := range links {
		if err := w.walk(l); err != nil || w.found != nil {
			return err
		}
	}
	return nil
}
