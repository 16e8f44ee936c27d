package workspace

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// SourceGitLook is the Source of a KindProtected Violation for a path git
// looks at besides a git directory's own entries: a hooks directory that
// core.hooksPath names (Rule "core.hooksPath") or a config file that
// include.path or includeIf.*.path names (Rule "include.path"); Detail is
// that directory or file.
const SourceGitLook = "git configuration"

// gitLook returns the rule under which git runs code from the write
// target t, and the hooks directory or config file concerned; or "", "".
// The repositories are the workspace's (policy.Repo) and each one whose
// work tree top is a directory the walk to t holds (a .git there, looked
// up with fstatat on that descriptor); where git looks for them is asked
// of policy.Policy.GitLooks, as the backends ask it.
func (f *FS) gitLook(t *target) (rule, detail string) {
	if f.policy == nil || !t.m.Writable {
		return "", ""
	}
	var gitDirs, gitlinks []string
	type dir struct {
		fd   handle
		path string
	}
	// The workspace's top (its repository may name a hooks directory in
	// another root), then each directory on the way to t.
	dirs := []dir{{f.mounts[0].fd, f.mounts[0].Path}}
	for j := 0; j < len(t.dirs) && j <= len(t.names); j++ {
		if p := path.Join(t.m.Path, strings.Join(t.names[:j], "/")); p != dirs[0].path {
			dirs = append(dirs, dir{t.dirs[j], p})
		}
	}
	for _, d := range dirs {
		var st sysStat
		if lstatAt(d.fd, ".git", &st) != nil {
			continue
		}
		dotGit := filepath.FromSlash(path.Join(d.path, ".git"))
		switch {
		case st.isDir():
			gitDirs = append(gitDirs, dotGit)
		case st.isReg():
			gitlinks = append(gitlinks, dotGit)
		}
	}
	looks := f.policy.GitLooks(gitDirs, gitlinks)
	abs := fold(t.abs)
	for _, h := range looks.Hooks {
		if policy.Within(abs, fold(realSlash(h))) {
			return "core.hooksPath", h
		}
	}
	for _, c := range looks.Configs {
		if abs == fold(realSlash(c)) {
			return "include.path", c
		}
	}
	return "", ""
}

// realSlash is p with the symbolic links of its longest existing prefix
// resolved (as the walk resolves the target's), with "/" separators.
func realSlash(p string) string {
	rest := ""
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.ToSlash(filepath.Join(r, rest))
		}
		if q == filepath.Dir(q) {
			return filepath.ToSlash(p)
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}
