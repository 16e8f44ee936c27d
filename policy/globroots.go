package policy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// DenyGlobReadRoots returns the trees, besides the writable roots, in which
// a backend searches for what the relative deny globs ("**/.env") match
// before each run: the workspace, the work tree of its repository (Repo),
// and every other read path, whether a profile, a config file or
// --allow-read added it. Denies apply inside anything allowed, so a read
// path is searched like the workspace; the exceptions are read paths that
// are
//
//   - one of DenyGlobSkipped(home), the system directories and tool
//     caches (see there). Only these exact paths are skipped: a path named
//     inside one (--allow-read /opt/proj) is searched;
//   - inside a host write path: it is searched as part of that root;
//   - covered by a literal deny entry: nothing in it is visible anyway.
//
// A read path that is a file is returned too: it is denied itself when its
// name matches a relative glob (see DenyGlobForFile). Paths that do not
// exist are the caller's to skip.
func (p *Policy) DenyGlobReadRoots(home string) []string {
	skip := DenyGlobSkipped(home)
	out := []string{p.Workspace}
	if p.Repo != nil {
		out = append(out, p.Repo.Read...)
	}
	writes := p.HostWrites()
	for _, r := range p.Read {
		if slices.Contains(skip, r) || r == SandboxTmpDir || CoveredBy(r, writes) || DeniedBy(p.Deny, r) != "" || slices.Contains(out, r) {
			continue
		}
		out = append(out, r)
	}
	return out
}

// DenyGlobSkipped returns the trees in which relative deny globs are not
// searched: the system directories (SystemReads) and the profiles' home
// tool caches and configs (DevelopmentHomeReads, expanded with home). They
// hold no project files, and walking /usr or ~/go/pkg/mod (hundreds of
// thousands of entries) on every run would cost far more than most runs;
// what a glob matches there is a library's file (Python's secrets.py,
// client-go's secrets.go), and masking it would break the tools. They are
// not walked as read roots (see DenyGlobReadRoots), and what the walk of a
// root that holds one (--allow-read ~) matches inside it is ignored.
//
// The tool configs among them (DevelopmentHomeConfigs: ~/.gitconfig,
// ~/.config/git, ~/.config/cordon) are small and may hold secrets (git's
// credential store writes ~/.config/git/credentials): they are searched.
func DenyGlobSkipped(home string) []string {
	out := slices.Clone(SystemReads)
	for _, h := range DevelopmentHomeReads {
		if slices.Contains(DevelopmentHomeConfigs, h) {
			continue
		}
		out = append(out, filepath.Clean(strings.ReplaceAll(h, "${HOME}", home)))
	}
	return out
}

// DenyGlobForFile returns the relative deny glob that denies path, a read
// path that is a file (--allow-read ~/d/.env), or "" (also for a directory
// or a missing path). A file has no tree to search, so it is denied itself
// when a glob matches its name alone, or, for a symbolic link, the name of
// what it points to, as it would be if its directory were searched:
// "**/.env" and ".env" match ~/d/.env, "config/*.json" matches no name.
func (p *Policy) DenyGlobForFile(path string) string {
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() {
		return ""
	}
	if g := p.denyGlobForName(path); g != "" {
		return g
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		return p.denyGlobForName(target)
	}
	return ""
}

// denyGlobForName returns the first relative deny glob that matches the
// last element of path, or "".
func (p *Policy) denyGlobForName(path string) string {
	name := filepath.Base(path)
	for _, d := range p.Deny {
		if IsAbs(d) {
			continue
		}
		if g, err := globscan.Compile(d); err == nil && g.Match(name) {
			return d
		}
	}
	return ""
}
