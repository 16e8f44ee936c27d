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
// Grep): p itself, then each entry below it, as the search would open
// it, a symbolic link by its target. The first denied entry refuses the
// whole search, naming that entry: a search tool prints the lines it
// matches, so one secret below a directory the policy shows (a .env in
// the workspace) would leak through it.
func (c *call) decideTree(p string) (*denial, error) {
	cs, err := candidates(c.cwd, p, c.env.Home)
	if err != nil {
		return &denial{fmt.Sprintf("cordon: searching %s refused: %s", p, oneLine(err.Error()))}, nil
	}
	root := cs[len(cs)-1] // the kernel's resolution of the cleaned path
	fi, err := os.Stat(root)
	if err != nil || !fi.IsDir() {
		return nil, nil // a file, decided by decidePath; a missing path finds nothing
	}
	n := 0
	var found *denial
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil // what the walk cannot read, the search cannot either
		}
		if n++; n > maxTreeEntries {
			return errTreeTooLarge
		}
		check := []string{path}
		if e.Type()&fs.ModeSymlink != 0 {
			real, err := resolve(path)
			if err != nil {
				found = &denial{fmt.Sprintf("cordon: searching %s refused: %s does not resolve: %s", p, path, oneLine(err.Error()))}
				return fs.SkipAll
			}
			check = append(check, real)
		}
		for _, q := range check {
			if dec := c.decider.DecideHost(policy.OpRead, q); dec.Denied {
				found = &denial{reason("searching", p+" (it holds "+q+")", dec, c.env.Home) +
					"; search a narrower path, or search with the shell, which runs confined and does not see it"}
				return fs.SkipAll
			}
		}
		return nil
	})
	if errors.Is(err, errTreeTooLarge) {
		return &denial{fmt.Sprintf("cordon: searching %s refused: more than %d entries to check against the sandbox policy; search a narrower path, or search with the shell, which runs confined", p, maxTreeEntries)}, nil
	}
	return found, nil
}
