package gitrepo

import "golang.org/x/sys/unix"

// dirOpenFlags open a directory for looking up entries only.
const dirOpenFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
