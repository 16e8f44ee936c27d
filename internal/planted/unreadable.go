package planted

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// maxRestorePasses bounds how many levels of directories made unreadable
// one inside another Check makes readable again and searches.
const maxRestorePasses = 4

// unreadable looks at the directories the walk could not read that were
// made so during the run (their change time is the run's): a repository
// planted inside one would run on the host once it is readable again, and
// a secret there is what the next run's deny rules could not find. Unless
// keep, each gets its owner's read and search permission back (the run,
// as this user, could only have changed the mode of one of this user's
// own), for the caller to search it: restored says so, one line each.
// notes are those left unreadable. Directories the user had closed
// before are theirs, and not reported; nothing is renamed, so nothing is
// reported again by a later run.
// pathMax is Linux's PATH_MAX: a longer path cannot be opened whole.
const pathMax = 4096

func (b *Before) unreadable(r *os.Root, root string, skipped []string, ignored func(string) bool, keep bool) (notes, restored []string) {
	for _, p := range skipped {
		rel, ok := under(root, p)
		if !ok || (ignored != nil && ignored(p)) {
			continue
		}
		fi, err := r.Lstat(rel)
		if errors.Is(err, syscall.ENAMETOOLONG) || err == nil && fi.IsDir() && len(p) >= pathMax {
			// Nested past the longest path the system opens: the
			// rest of the root was searched, this tree was not.
			notes = append(notes, fmt.Sprintf("a directory the run nested deeper than a path can name was not searched (%.80s...): remove it before you run git or other tools there", p))
			continue
		}
		if err != nil || !fi.IsDir() || statOf(fi).ctime.Before(b.at.Add(-ctimeSlack)) {
			continue
		}
		mode := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
		if !keep {
			err := r.Chmod(rel, mode|0o500)
			if err == nil {
				restored = append(restored, fmt.Sprintf("the run made %s unreadable (mode %04o): its owner's read and search permission was given back (mode %04o), and it was checked", p, mode.Perm(), (mode|0o500).Perm()))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s was made unreadable during the run (mode %04o) and could not be searched, nor made readable again (%v): look inside before you run git there", p, mode.Perm(), err))
			continue
		}
		notes = append(notes, fmt.Sprintf("%s was made unreadable during the run (mode %04o) and was not searched: look inside before you run git there", p, mode.Perm()))
	}
	return notes, restored
}
