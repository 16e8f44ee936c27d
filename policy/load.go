package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/gitconfig"

	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Options says where Load finds the layers of a policy.
type Options struct {
	// Host supplies the home and current directories and the environment.
	Host Host
	// Workspace is --workspace; "" means Host.Cwd. A relative path is
	// taken from Host.Cwd.
	Workspace string
	// ConfigFiles are the --config files, in order; relative paths are
	// taken from Host.Cwd.
	ConfigFiles []string
	// Flags holds the policy flags; it may be nil. It is treated as a
	// config.SourceFlags layer: relative paths are taken from Host.Cwd and
	// errors name the flag (see config.FlagFor and Layer.SetWhere).
	Flags *config.Layer
	// SkipUserConfig skips $XDG_CONFIG_HOME/cordon/config.yaml.
	SkipUserConfig bool
	// AllowHomeWorkspace accepts a workspace that is the home directory,
	// an ancestor of it, or / (--allow-home-workspace); the policy then
	// says HomeWorkspace.
	AllowHomeWorkspace bool
}

// layer is a config.Layer with what Load knows about it.
type layer struct {
	*config.Layer
	// tighten marks a file the sandbox could have written (inside the
	// workspace or another writable root): it may only add restrictions.
	tighten bool
	// root is the writable root a tighten layer lies in, or "" for the
	// workspace; it explains the refusal in messages.
	root string
	// user marks the user config file.
	user bool
	// profile marks the built-in profile layer.
	profile bool
}

// fileSource is a config file to read: the user config or a --config.
type fileSource struct {
	// name is the file as given (a --config may be relative): the
	// Layer's Source, so errors name it as the user wrote it.
	name string
	// abs is the absolute, cleaned path.
	abs string
	// config marks a --config file (a missing one is an error).
	config bool
}

// writableRoot is a directory a sandbox may write, as written and with
// symlinks resolved.
type writableRoot struct {
	path, real string
}

// Load builds the effective Policy from, in increasing precedence: the
// built-in profile (chosen by the last layer that sets sandbox.profile,
// default development), the user config file, each --config file, the
// flags, and the workspace's .cordon.yaml. Later layers win for single
// values; lists accumulate.
//
// A file the sandbox could write may only tighten the policy: the
// workspace's .cordon.yaml, and a user config or --config file inside the
// workspace or inside any other writable root of the merged policy (such
// a file is read again without following symbolic links below that root,
// and the layers merged again). A workspace that is the home directory,
// an ancestor of it, or / is refused unless Options.AllowHomeWorkspace
// (or the mode is off).
//
// When the workspace belongs to a git repository whose work tree or git
// directory lies outside it (a sub-directory, a linked worktree, a
// submodule checkout), the policy also grants git what it needs there,
// and Policy.Repo says what and why (see Repo).
//
// Errors in a file are *config.Error naming the file, line and key; errors
// in flags name the flag.
func Load(opts Options) (*Policy, error) {
	h := opts.Host
	if !filepath.IsAbs(h.Home) {
		return nil, fmt.Errorf("home directory %q is not an absolute path", h.Home)
	}
	if !filepath.IsAbs(h.Cwd) {
		return nil, fmt.Errorf("current directory %q is not an absolute path", h.Cwd)
	}
	h.Home, h.Cwd = filepath.Clean(h.Home), filepath.Clean(h.Cwd)
	ws, wsRaw, err := resolveWorkspace(opts.Workspace, h.Cwd)
	if err != nil {
		return nil, err
	}

	var sources []fileSource
	userPath := UserConfigPath(h)
	if !opts.SkipUserConfig {
		sources = append(sources, fileSource{name: userPath, abs: userPath})
	}
	for _, f := range opts.ConfigFiles {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(h.Cwd, abs)
		}
		sources = append(sources, fileSource{name: f, abs: filepath.Clean(abs), config: true})
	}

	// First pass: only the workspace is known to be writable.
	roots := []writableRoot{{path: wsRaw, real: ws}}
	layers, err := readLayers(sources, roots, ws)
	if err != nil {
		return nil, err
	}
	wsLayers, err := extraLayers(opts, ws)
	if err != nil {
		return nil, err
	}
	p, err := merge(h, ws, userPath, append(withWorkspace(layers, ws, wsRaw), wsLayers...))
	if err != nil {
		return nil, err
	}

	// Second pass: a file inside any writable root of the merged policy
	// comes from where the sandbox could write, so it may only tighten.
	roots = writableRoots(p, ws, wsRaw)
	again := false
	for i, src := range sources {
		if layers[i].Layer == nil || layers[i].tighten {
			continue
		}
		if _, ok := rootOf(src.abs, roots); ok {
			again = true
		}
	}
	if again {
		if layers, err = readLayers(sources, roots, ws); err != nil {
			return nil, err
		}
		if p, err = merge(h, ws, userPath, append(withWorkspace(layers, ws, wsRaw), wsLayers...)); err != nil {
			return nil, err
		}
	}
	if err := checkHomeWorkspace(p, h, opts.AllowHomeWorkspace); err != nil {
		return nil, err
	}
	return p, nil
}

// readLayers reads the user config and --config files. One that lies
// inside a writable root is read without following symbolic links below
// that root, and marked tighten. A missing user config gives a layer with
// a nil Layer, so that layers and sources stay parallel.
func readLayers(sources []fileSource, roots []writableRoot, ws string) ([]layer, error) {
	layers := make([]layer, len(sources))
	for i, src := range sources {
		path, opts := src.abs, config.ReadOptions{}
		root, in := rootOf(src.abs, roots)
		if in {
			path, opts.Beneath = root.file, root.root
		}
		data, err := config.ReadFile(path, opts)
		switch {
		case errors.Is(err, fs.ErrNotExist) && !src.config:
			continue
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("--config %s: no such file", src.name)
		case err != nil && src.config:
			return nil, fmt.Errorf("--config: %w", err)
		case err != nil:
			return nil, fmt.Errorf("user config: %w", err)
		}
		l, err := config.Parse(src.name, data)
		if err != nil {
			return nil, err
		}
		layers[i] = layer{Layer: l, tighten: in, user: !src.config}
		if in && root.root != ws {
			layers[i].root = root.root
		}
	}
	return layers, nil
}

// withWorkspace returns layers with, after each, its entry under the
// top-level workspaces key for this workspace (ws, or wsRaw as given),
// if it has one: a layer of the same file, as able to loosen as the
// file is (an entry in a file the sandbox could write may only tighten,
// and so is refused).
func withWorkspace(layers []layer, ws, wsRaw string) []layer {
	out := make([]layer, 0, len(layers))
	for _, l := range layers {
		out = append(out, l)
		if l.Layer == nil {
			continue
		}
		for _, w := range l.Workspaces {
			if c := filepath.Clean(w.Path); c == ws || c == wsRaw {
				g := l
				g.Layer = w.Layer
				out = append(out, g)
			}
		}
	}
	return out
}

// extraLayers returns the flags layer and the workspace's .cordon.yaml,
// read without following symbolic links inside the workspace.
func extraLayers(opts Options, ws string) ([]layer, error) {
	var layers []layer
	if opts.Flags != nil {
		fl := *opts.Flags
		fl.Source = config.SourceFlags
		layers = append(layers, layer{Layer: &fl})
	}
	wsFile := filepath.Join(ws, WorkspaceConfigName)
	if l, err := config.ParseFile(wsFile, config.ReadOptions{Beneath: ws}); err == nil {
		layers = append(layers, layer{Layer: l, tighten: true})
	} else if isConfigError(err) {
		return nil, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("workspace config: %w", err)
	}
	return layers, nil
}

// merge builds the policy from the built-in profile and layers.
func merge(h Host, ws, userPath string, layers []layer) (*Policy, error) {
	b := &builder{
		host:        h,
		ws:          ws,
		userDisplay: tildePath(userPath, h.Home),
	}

	// The profile is chosen first: every other layer applies on top of it.
	// A file that may only tighten may pick a profile at least as tight
	// as the one chosen so far (see AtLeastAsTight).
	name := DefaultProfile
	for _, l := range layers {
		if l.Layer == nil || l.Profile == nil {
			continue
		}
		if err := checkEnum(l, config.KeyProfile, *l.Profile, Profiles()); err != nil {
			return nil, err
		}
		if l.tighten && !AtLeastAsTight(*l.Profile, name) {
			return nil, b.loosen(l, config.KeyProfile, fmt.Sprintf("%s: %s (%s)", config.KeyProfile, *l.Profile, notAsTight(name)))
		}
		name = *l.Profile
	}
	base, err := Profile(name)
	if err != nil {
		return nil, err
	}
	b.p = &Policy{Profile: name, Workspace: ws, Env: Env{Set: map[string]string{}}}
	b.profileMode = Mode(*base.Mode)
	if err := b.apply(layer{Layer: base, profile: true}); err != nil {
		return nil, fmt.Errorf("built-in profile %s: %w", name, err)
	}
	for _, l := range layers {
		if l.Layer == nil {
			continue
		}
		if err := b.apply(l); err != nil {
			return nil, err
		}
	}
	p, err := b.finish()
	if err != nil {
		return nil, err
	}
	if b.wsDenied != nil && p.Mode != ModeOff {
		return nil, b.wsDenied
	}
	grantRepo(p, h)
	p.GitEnv = gitconfig.EnvFrom(h.Home, h.Getenv)
	grantGitLooks(p, h)
	p.Warnings = b.flagWarnings(p)
	return p, nil
}

// writableRoots returns the directories the sandbox of p may write: its
// write paths except the private /tmp, and the workspace (whose files may
// only tighten even when the profile keeps it read-only).
func writableRoots(p *Policy, ws, wsRaw string) []writableRoot {
	roots := []writableRoot{{path: wsRaw, real: ws}}
	for _, w := range p.Write {
		if w == SandboxTmpDir {
			continue
		}
		r := writableRoot{path: w, real: w}
		if real, err := filepath.EvalSymlinks(w); err == nil {
			r.real = real
		}
		roots = append(roots, r)
	}
	return roots
}

// rootMatch is where a file lies inside a writable root: the root and the
// file, both either as written or with symlinks resolved.
type rootMatch struct {
	root, file string
}

// rootOf reports whether file lies inside one of roots, comparing its
// cleaned path with the roots as written and its real path (symlinks
// resolved) with the roots' real paths.
func rootOf(file string, roots []writableRoot) (rootMatch, bool) {
	file = filepath.Clean(file)
	for _, r := range roots {
		if subpath.Below(file, r.path) {
			return rootMatch{root: r.path, file: file}, true
		}
	}
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return rootMatch{}, false
	}
	for _, r := range roots {
		if subpath.Below(real, r.real) {
			return rootMatch{root: r.real, file: real}, true
		}
	}
	return rootMatch{}, false
}

// checkHomeWorkspace refuses a workspace that is the home directory, an
// ancestor of it, or /, unless allowed or the mode is off: a command
// there could plant files that run later (~/.bashrc, ~/.config/...).
// When allowed, it marks the policy HomeWorkspace.
func checkHomeWorkspace(p *Policy, h Host, allow bool) error {
	if p.Mode == ModeOff {
		return nil
	}
	homes := []string{h.Home}
	if real, err := filepath.EvalSymlinks(h.Home); err == nil {
		homes = append(homes, real)
	}
	ws, what := p.Workspace, ""
	for _, home := range homes {
		switch {
		case ws == "/":
			what = "the root directory"
		case ws == home:
			what = "your home directory"
		case subpath.Within(home, ws) && what == "":
			what = "an ancestor of your home directory"
		}
	}
	if what == "" {
		return nil
	}
	if allow {
		p.HomeWorkspace = true
		return nil
	}
	return fmt.Errorf("the workspace %s is %s: a command there could plant files that run later (~/.bashrc, ~/.config/...); cd into a project, or pass --workspace DIR (or --allow-home-workspace to insist)", ws, what)
}

func isConfigError(err error) bool {
	var ce *config.Error
	return errors.As(err, &ce)
}

// resolveWorkspace returns the workspace with symlinks resolved, and the
// absolute path before resolution.
func resolveWorkspace(flag, cwd string) (string, string, error) {
	label, dir := "--workspace "+flag, flag
	if flag == "" {
		label, dir = "current directory "+cwd, cwd
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cwd, dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Errorf("%s: no such directory", label)
	case err != nil:
		return "", "", fmt.Errorf("%s: %w", label, err)
	case !fi.IsDir():
		return "", "", fmt.Errorf("%s: not a directory", label)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", fmt.Errorf("%s: resolving symlinks: %w", label, err)
	}
	return resolved, dir, nil
}
