package gitrepo

import "fmt"

// Find is built only for Linux and macOS: it works on descriptors,
// device and inode numbers, which Windows does not offer in the same
// form. On Windows it always returns an error that says so; a caller
// grants nothing for git (and on Windows no file access is confined
// anyway).
func Find(dir string) (*Repo, error) {
	return nil, fmt.Errorf("%s: finding the git repository is built only for Linux and macOS, not for Windows", dir)
}
