package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/config"
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
}

// layer is a config.Layer with what Load knows about it.
type layer struct {
	*config.Layer
	// tighten marks a file inside the workspace: it may only add
	// restrictions.
	tighten bool
	// profile marks the built-in profile layer.
	profile bool
}

// Load builds the effective Policy from, in increasing precedence: the
// built-in profile (chosen by the last layer that sets sandbox.profile,
// default development), the user config file, each --config file, the
// flags, and the workspace's .cordon.yaml. Later layers win for single
// values; lists accumulate. Files inside the workspace (.cordon.yaml, or a
// --config file there) may only tighten the policy.
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

	var layers []layer
	userPath := UserConfigPath(h)
	if !opts.SkipUserConfig {
		l, err := config.ParseFile(userPath, config.ReadOptions{})
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case isConfigError(err):
			return nil, err
		case err != nil:
			return nil, fmt.Errorf("user config: %w", err)
		default:
			layers = append(layers, layer{Layer: l})
		}
	}
	for _, f := range opts.ConfigFiles {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(h.Cwd, abs)
		}
		data, err := config.ReadFile(abs, config.ReadOptions{})
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--config %s: no such file", f)
		} else if err != nil {
			return nil, fmt.Errorf("--config: %w", err)
		}
		l, err := config.Parse(f, data)
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer{Layer: l, tighten: inside(abs, ws, wsRaw)})
	}
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

	b := &builder{
		host:        h,
		ws:          ws,
		userDisplay: tildePath(userPath, h.Home),
	}

	// The profile is chosen first: every other layer applies on top of it.
	name := DefaultProfile
	for _, l := range layers {
		if l.Profile == nil {
			continue
		}
		if l.tighten {
			return nil, b.loosen(l, config.KeyProfile, config.KeyProfile)
		}
		if err := checkEnum(l, config.KeyProfile, *l.Profile, Profiles()); err != nil {
			return nil, err
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
		if err := b.apply(l); err != nil {
			return nil, err
		}
	}
	return b.finish(), nil
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
	if resolved == "/" {
		return "", "", fmt.Errorf("%s: the workspace cannot be the root directory; pass the project directory with --workspace", label)
	}
	return resolved, dir, nil
}

// inside reports whether file lies inside the workspace, comparing both
// with and without symlinks resolved.
func inside(file, ws, wsRaw string) bool {
	cands := []string{filepath.Clean(file)}
	if r, err := filepath.EvalSymlinks(file); err == nil {
		cands = append(cands, r)
	}
	for _, c := range cands {
		for _, w := range []string{ws, wsRaw} {
			if within(c, w) {
				return true
			}
		}
	}
	return false
}
