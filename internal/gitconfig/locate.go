package gitconfig

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/internal/parallel"
)

// Bounds of Locate.
const (
	// MaxFile is the most bytes read of one config file.
	MaxFile = 1 << 20
	// MaxIncludeDepth is how deep includes are followed: git stops (and
	// fails) beyond 10.
	MaxIncludeDepth = 10
	// maxSmall bounds a commondir, gitdir or .git file.
	maxSmall = 4096
)

// Env is what decides, beside a repository's own files, which config
// files git reads: the home directory and git's variables, as git sees
// them in cordon's environment.
type Env struct {
	// Home is the home directory: ~ and ~/.gitconfig. "" reads no global
	// file there and expands no ~.
	Home string
	// XDGConfigHome is $XDG_CONFIG_HOME when absolute, else Home/.config
	// ("" for the default).
	XDGConfigHome string
	// ConfigSystem is GIT_CONFIG_SYSTEM: the system file instead of
	// /etc/gitconfig.
	ConfigSystem string
	// ConfigGlobal is GIT_CONFIG_GLOBAL: the one global file, instead of
	// $XDG_CONFIG_HOME/git/config and ~/.gitconfig.
	ConfigGlobal string
	// NoSystem is GIT_CONFIG_NOSYSTEM: no system file.
	NoSystem bool
	// Command is the command scope git reads after every file:
	// GIT_CONFIG_KEY_n = GIT_CONFIG_VALUE_n for n below GIT_CONFIG_COUNT
	// (a core.hooksPath or an include there counts as in a file).
	Command []Entry
}

// maxCommand bounds how many GIT_CONFIG_KEY_n EnvFrom reads.
const maxCommand = 1000

// EnvFrom returns the Env of a home directory and an environment
// (getenv may be nil).
func EnvFrom(home string, getenv func(string) (string, bool)) Env {
	e := Env{Home: home}
	if getenv == nil {
		return e
	}
	get := func(k string) string { v, _ := getenv(k); return v }
	if v := get("XDG_CONFIG_HOME"); filepath.IsAbs(v) {
		e.XDGConfigHome = filepath.Clean(v)
	}
	e.ConfigSystem, e.ConfigGlobal = get("GIT_CONFIG_SYSTEM"), get("GIT_CONFIG_GLOBAL")
	e.NoSystem = isTrue(get("GIT_CONFIG_NOSYSTEM"), false)
	n, err := strconv.Atoi(strings.TrimSpace(get("GIT_CONFIG_COUNT")))
	for i := 0; err == nil && i < min(n, maxCommand); i++ {
		k := get("GIT_CONFIG_KEY_" + strconv.Itoa(i))
		if c, ok := commandEntry(k, get("GIT_CONFIG_VALUE_"+strconv.Itoa(i))); ok {
			e.Command = append(e.Command, c)
		}
	}
	return e
}

// commandEntry is the entry of a key given in the environment
// (section[.sub].name: the section and name lower-cased).
func commandEntry(key, value string) (Entry, bool) {
	i, j := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if i <= 0 || j == len(key)-1 {
		return Entry{}, false
	}
	e := Entry{Section: strings.ToLower(key[:i]), Name: strings.ToLower(key[j+1:]), Value: value}
	if i < j {
		e.Sub, e.HasSub = key[i+1:j], true
	}
	return e, true
}

// Repo names a repository by its directories (absolute).
type Repo struct {
	// GitDir is the git directory.
	GitDir string
	// CommonDir is the common directory (config, hooks), "" for GitDir.
	CommonDir string
	// WorkTree is the top of the work tree, "" for a bare repository.
	WorkTree string
}

// Locations are where git looks for a repository.
type Locations struct {
	// HooksDir is the directory git runs hooks from: the last
	// core.hooksPath, else CommonDir/hooks.
	HooksDir string
	// HooksPath is set when core.hooksPath chose HooksDir.
	HooksPath bool
	// Configs are the config files git reads, in its order: system,
	// global, the repository's config and config.worktree, each followed
	// by what it includes. A file that does not exist is listed too
	// (created, git would read it).
	Configs []string
	// Included are the Configs that an include.path or an
	// includeIf.*.path names (every includeIf counts as true), and those
	// that GIT_CONFIG_SYSTEM or GIT_CONFIG_GLOBAL names: no fixed list
	// of paths holds them.
	Included []string
}

// Locate says where git looks for hooks and which config files it reads
// for repository r, from the files alone, as git resolves them: a
// relative include path is taken from the including file's directory, a
// relative core.hooksPath from the work tree (the git directory of a bare
// repository), and "~/" from env.Home. Each includeIf is taken as true,
// whatever its condition: a file git may read is a file git reads. The
// files are read by descriptor, each at most MaxFile bytes, includes at
// most MaxIncludeDepth deep.
func Locate(r Repo, env Env) Locations {
	return LocateAll([]Repo{r}, env)[0]
}

// LocateAll is Locate for each of repos, reading each file once.
func LocateAll(repos []Repo, env Env) []Locations {
	return locateAll(repos, env, newFileCache())
}

func locateAll(repos []Repo, env Env, files *fileCache) []Locations {
	out := make([]Locations, len(repos))
	// A workspace of many nested repositories reads a config or two of
	// each, a few system calls apiece, which two cores share.
	parallel.Each(len(repos), func(i int) { out[i] = locate(repos[i], env, files) })
	return out
}

// fileCache is what was read, by path (nil entries: unreadable), shared
// by the locators of one call: the system and global configs are every
// repository's.
type fileCache struct {
	mu sync.Mutex
	m  map[string][]Entry
}

func newFileCache() *fileCache { return &fileCache{m: map[string][]Entry{}} }

// LocateFound is LocateAll for the repositories of gitDirs (see RepoAt)
// and gitlinks (see RepoOfGitlink) after those of repos, reading each
// file once; it returns the repositories too.
func LocateFound(repos []Repo, gitDirs, gitlinks []string, env Env) ([]Repo, []Locations) {
	files := newFileCache()
	found := make([]Repo, len(gitDirs))
	parallel.Each(len(gitDirs), func(i int) { found[i] = repoAt(gitDirs[i], files) })
	repos = append(repos, found...)
	for _, l := range gitlinks {
		if r, ok := repoOfGitlink(l, files); ok {
			repos = append(repos, r)
		}
	}
	return repos, locateAll(repos, env, files)
}

func locate(r Repo, env Env, files *fileCache) Locations {
	common := r.CommonDir
	if common == "" {
		common = r.GitDir
	}
	l := &locator{env: env, seen: map[string]bool{}, files: files}
	if !env.NoSystem {
		if env.ConfigSystem != "" {
			l.read(env.ConfigSystem, 0, true)
		} else {
			l.read("/etc/gitconfig", 0, false)
		}
	}
	switch {
	case env.ConfigGlobal != "":
		l.read(l.expand(env.ConfigGlobal), 0, true)
	case env.Home != "":
		xdg := env.XDGConfigHome
		if xdg == "" {
			xdg = filepath.Join(env.Home, ".config")
		}
		l.read(filepath.Join(xdg, "git", "config"), 0, false)
		l.read(filepath.Join(env.Home, ".gitconfig"), 0, false)
	}
	local := l.read(filepath.Join(common, "config"), 0, false)
	if worktreeConfig(local) {
		l.read(filepath.Join(r.GitDir, "config.worktree"), 0, false)
	}
	l.follow(env.Command, "", 0)
	out := Locations{HooksDir: filepath.Join(common, "hooks"), Configs: l.configs, Included: l.included}
	if h := l.expand(l.hooksPath); h != "" {
		base := r.WorkTree
		if base == "" {
			base = r.GitDir
		}
		if !filepath.IsAbs(h) {
			h = filepath.Join(base, h)
		}
		out.HooksDir, out.HooksPath = filepath.Clean(h), true
	}
	return out
}

// locator is the state of one Locate.
type locator struct {
	env       Env
	seen      map[string]bool
	configs   []string
	included  []string
	hooksPath string
	files     *fileCache
}

// read reads the config file path and, in order, what it includes;
// it returns the file's own entries.
func (l *locator) read(path string, depth int, include bool) []Entry {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	path = filepath.Clean(path)
	if include {
		if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
			// git reads nothing from a directory, and nothing is planted
			// in a device (GIT_CONFIG_GLOBAL=/dev/null)
			return nil
		}
	}
	if !l.seen[path] {
		l.seen[path] = true
		l.configs = append(l.configs, path)
		if include {
			l.included = append(l.included, path)
		}
	} else if depth > 0 {
		return nil // a loop: git would fail; nothing new to find
	}
	es := l.files.entries(path)
	l.follow(es, filepath.Dir(path), depth)
	return es
}

// follow takes in the entries of a file in dir (depth includes deep;
// "" for the command scope, where git refuses a relative include): the
// last core.hooksPath, and what each include names.
func (l *locator) follow(es []Entry, dir string, depth int) {
	for _, e := range es {
		switch {
		case e.Is("core", "hookspath") && !e.Bare:
			l.hooksPath = e.Value
		case !e.Bare && e.Name == "path" && (e.Section == "include" && !e.HasSub || e.Section == "includeif" && e.HasSub):
			if depth >= MaxIncludeDepth {
				continue
			}
			t := l.expand(e.Value)
			if t == "" {
				continue
			}
			if !filepath.IsAbs(t) {
				if dir == "" {
					continue
				}
				t = filepath.Join(dir, t)
			}
			l.read(t, depth+1, true)
		}
	}
}

// entries returns the entries of the config file path, read once into
// files (none when it cannot be read; a file git refuses still counts up
// to its bad line).
// entries returns the entries of the config file path, read once. Two
// locators asking at once may both read it: the same file gives the same
// entries.
func (c *fileCache) entries(path string) []Entry {
	c.mu.Lock()
	es, done := c.m[path]
	c.mu.Unlock()
	if done {
		return es
	}
	if data, err := readFile(path, MaxFile); err == nil {
		es, _ = Parse(data)
	}
	c.mu.Lock()
	c.m[path] = es
	c.mu.Unlock()
	return es
}

// expand expands a path value as git's interpolate_path does for "~/"
// and "~"; "" for what it cannot expand (~user, %(prefix)).
func (l *locator) expand(v string) string {
	switch {
	case v == "":
		return ""
	case v == "~" || strings.HasPrefix(v, "~/"):
		if l.env.Home == "" {
			return ""
		}
		return filepath.Join(l.env.Home, strings.TrimPrefix(v, "~"))
	case strings.HasPrefix(v, "~"), strings.HasPrefix(v, "%("):
		return ""
	}
	return v
}

// worktreeConfig reports whether a repository's config turns on
// extensions.worktreeConfig (git reads config.worktree only then).
func worktreeConfig(es []Entry) bool {
	on := false
	for _, e := range es {
		if e.Is("extensions", "worktreeconfig") {
			on = e.Bare || isTrue(e.Value, false)
		}
	}
	return on
}

// isTrue reads a git boolean; def for what is not one.
func isTrue(v string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "yes", "on", "1":
		return true
	case "false", "no", "off", "0", "":
		return false
	}
	return def
}

// readFile reads up to max bytes of the regular file path through one
// descriptor (following a symbolic link, as git does).
func readFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, os.ErrInvalid
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(fi.Size(), max)+1))
	_, err = buf.ReadFrom(io.LimitReader(f, max))
	return buf.Bytes(), err
}

// RepoAt describes the repository of the git directory gitDir from its
// own files: its commondir, and its work tree from core.worktree
// (relative to gitDir), a linked worktree's gitdir file, core.bare, or
// the directory holding a git directory named .git.
func RepoAt(gitDir string) Repo {
	return repoAt(gitDir, newFileCache())
}

func repoAt(gitDir string, files *fileCache) Repo {
	r := Repo{GitDir: filepath.Clean(gitDir)}
	if b, err := readFile(filepath.Join(r.GitDir, "commondir"), maxSmall); err == nil {
		if c := strings.TrimSpace(string(b)); c != "" {
			if !filepath.IsAbs(c) {
				c = filepath.Join(r.GitDir, c)
			}
			r.CommonDir = filepath.Clean(c)
		}
	}
	common := r.GitDir
	if r.CommonDir != "" {
		common = r.CommonDir
	}
	var worktree string
	bare := false
	for _, e := range files.entries(filepath.Join(common, "config")) {
		switch {
		case e.Is("core", "worktree") && !e.Bare:
			worktree = e.Value
		case e.Is("core", "bare"):
			bare = e.Bare || isTrue(e.Value, false)
		}
	}
	switch {
	case worktree != "":
		if !filepath.IsAbs(worktree) {
			worktree = filepath.Join(r.GitDir, worktree)
		}
		r.WorkTree = filepath.Clean(worktree)
	case r.CommonDir != "":
		// A linked worktree: its gitdir file names its .git file.
		if b, err := readFile(filepath.Join(r.GitDir, "gitdir"), maxSmall); err == nil {
			if g := strings.TrimSpace(string(b)); filepath.IsAbs(g) {
				r.WorkTree = filepath.Dir(filepath.Clean(g))
			}
		}
	case bare:
	case filepath.Base(r.GitDir) == ".git":
		r.WorkTree = filepath.Dir(r.GitDir)
	}
	return r
}

// RepoOfGitlink describes the repository of the .git file dotGit
// ("gitdir: PATH", PATH relative to its directory): its work tree is the
// file's directory. ok is false when the file names nothing.
func RepoOfGitlink(dotGit string) (Repo, bool) {
	return repoOfGitlink(dotGit, newFileCache())
}

func repoOfGitlink(dotGit string, files *fileCache) (Repo, bool) {
	b, err := readFile(dotGit, maxSmall)
	if err != nil {
		return Repo{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	t, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if t = strings.TrimSpace(t); !ok || t == "" {
		return Repo{}, false
	}
	if !filepath.IsAbs(t) {
		t = filepath.Join(filepath.Dir(dotGit), t)
	}
	r := repoAt(t, files)
	r.WorkTree = filepath.Dir(filepath.Clean(dotGit))
	return r, true
}
