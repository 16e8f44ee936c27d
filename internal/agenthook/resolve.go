package agenthook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds the symbolic links one resolution follows, as the
// kernel's (40).
const maxLinks = 40

// candidates returns every host path an agent's file tool may reach when
// it is given p in the directory base: p taken literally (relative to
// base), with a leading ~ as the home directory (tools expand it), each
// both as the kernel resolves it (symbolic links followed component by
// component, ".." after the link it follows) and after the lexical
// cleaning a tool may do first (Node's path.resolve), then resolved. The
// literal cleaned paths are among them, since a deny entry matches names.
// A path that cannot be resolved (a loop of links, an unreadable link)
// is an error: the caller refuses the access.
func candidates(base, p, home string) ([]string, error) {
	if p == "" {
		return nil, errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return nil, errors.New("path holds a NUL byte")
	}
	raws := []string{p}
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		raws = append(raws, home+p[1:])
	}
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, r := range raws {
		abs := r
		if !filepath.IsAbs(abs) {
			// Not filepath.Join, which cleans: ".." must follow the
			// link before it, as the kernel does.
			abs = base + string(filepath.Separator) + abs
		}
		clean := filepath.Clean(abs)
		add(clean)
		for _, a := range []string{abs, clean} {
			real, err := resolve(a)
			if err != nil {
				return nil, fmt.Errorf("resolving %s: %w", a, err)
			}
			add(real)
		}
	}
	return out, nil
}

// resolve returns the absolute path abs names once every symbolic link in
// it is followed, as the kernel walks it: component by component, a link
// replaced by its target (an absolute one restarts at /), ".." taken from
// the directory reached so far. The first component that does not exist
// ends the walk: it and the rest are appended as they are (cleaned), what
// a write would create.
func resolve(abs string) (string, error) {
	rest := splitPath(abs)
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		links++
		if links > maxLinks {
			return "", errors.New("too many levels of symbolic links")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(splitPath(target), rest...)
	}
	return cur, nil
}

// splitPath splits p at its separators.
func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
