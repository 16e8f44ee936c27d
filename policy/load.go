package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/config"
)

// WorkspaceConfigName is the config file in the workspace root. Like any
// config file inside the workspace it may only tighten the policy.
const WorkspaceConfigName = ".cordon.yaml"

// SandboxTmpDir is what ${TMPDIR} expands to, and the TMPDIR every confined
// command sees: always "/tmp", because inside the sandbox /tmp is a private
// directory, not the host's /tmp (nor the host's $TMPDIR).
const SandboxTmpDir = "/tmp"

// Host is the host facts used for expansion; tests fill it with fake
// values, the CLI with HostFromOS.
type Host struct {
	// Home is the user's home directory (absolute): ${HOME} and ~.
	Home string
	// Cwd is the current directory (absolute): ${CWD}, the default
	// workspace, and the base of relative paths given as flags.
	Cwd string
	// XDGConfigHome is the base of the user config file; "" means
	// $XDG_CONFIG_HOME from Getenv if absolute, else Home/.config.
	XDGConfigHome string
	// XDGCacheHome is the base of ${SANDBOX_CACHE}; "" means
	// $XDG_CACHE_HOME from Getenv if absolute, else Home/.cache.
	XDGCacheHome string
	// XDGStateHome is the base of the default audit log; "" means
	// $XDG_STATE_HOME from Getenv if absolute, else Home/.local/state.
	XDGStateHome string
	// Getenv looks up a host environment variable; nil means none are set.
	Getenv func(string) (string, bool)
}

// HostFromOS returns the Host of the running process.
func HostFromOS() (Host, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Host{}, fmt.Errorf("finding the home directory: %w", err)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return Host{}, fmt.Errorf("finding the current directory: %w", err)
	}
	return Host{Home: home, Cwd: cwd, Getenv: os.LookupEnv}, nil
}

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

// Resource limit ranges accepted from config files and flags (a profile's 0
// means unlimited).
var (
	// MaxProcessesRange is the range of resources.max_processes.
	MaxProcessesRange = [2]int{1, 1000000}
	// MaxMemoryMBRange is the range of resources.max_memory_mb.
	MaxMemoryMBRange = [2]int{16, 1048576}
	// MaxCPUSecondsRange is the range of resources.max_cpu_seconds.
	MaxCPUSecondsRange = [2]int{1, 31536000}
	// MaxFileSizeMBRange is the range of resources.max_file_size_mb.
	MaxFileSizeMBRange = [2]int{1, 4194304}
)

// UserConfigPath returns the user config file Load reads:
// $XDG_CONFIG_HOME/cordon/config.yaml, by default ~/.config/cordon/config.yaml.
func UserConfigPath(h Host) string {
	return filepath.Join(h.configHome(), "cordon", "config.yaml")
}

// DefaultAuditLog returns the default audit log:
// $XDG_STATE_HOME/cordon/audit.jsonl, by default
// ~/.local/state/cordon/audit.jsonl.
func DefaultAuditLog(h Host) string {
	return filepath.Join(h.stateHome(), "cordon", "audit.jsonl")
}

func (h Host) xdg(field, env, def string) string {
	if field != "" {
		return field
	}
	if h.Getenv != nil {
		if v, ok := h.Getenv(env); ok && filepath.IsAbs(v) {
			return filepath.Clean(v)
		}
	}
	return filepath.Join(h.Home, def)
}

func (h Host) configHome() string { return h.xdg(h.XDGConfigHome, "XDG_CONFIG_HOME", ".config") }
func (h Host) cacheHome() string  { return h.xdg(h.XDGCacheHome, "XDG_CACHE_HOME", ".cache") }

// SandboxCache is what ${SANDBOX_CACHE} expands to for a workspace: a
// directory of tool caches that only sandboxes of that workspace use,
// $XDG_CACHE_HOME/cordon/sandbox/HASH. The host's own caches stay
// read-only inside: a build cache that a sandbox could write would let it
// plant compiled code in the user's next build outside.
func SandboxCache(h Host, workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return filepath.Join(h.cacheHome(), "cordon", "sandbox", hex.EncodeToString(sum[:12]))
}
func (h Host) stateHome() string {
	return h.xdg(h.XDGStateHome, "XDG_STATE_HOME", filepath.Join(".local", "state"))
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
		l, err := config.ParseFile(userPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case isConfigError(err):
			return nil, err
		case err != nil:
			return nil, fmt.Errorf("user config %s: %w", userPath, err)
		default:
			layers = append(layers, layer{Layer: l})
		}
	}
	for _, f := range opts.ConfigFiles {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(h.Cwd, abs)
		}
		data, err := os.ReadFile(abs)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--config %s: no such file", f)
		} else if err != nil {
			return nil, fmt.Errorf("--config %s: %w", f, err)
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
	if l, err := config.ParseFile(wsFile); err == nil {
		layers = append(layers, layer{Layer: l, tighten: true})
	} else if isConfigError(err) {
		return nil, err
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("workspace config %s: %w", wsFile, err)
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
		if !slices.Contains(Profiles(), *l.Profile) {
			return nil, l.Errorf(config.KeyProfile, "%s must be one of %s, not %q", l.Name(config.KeyProfile), strings.Join(Profiles(), ", "), *l.Profile)
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

// within reports whether path p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// tildePath abbreviates a path under home as ~/...
func tildePath(p, home string) string {
	if within(p, home) && p != home {
		return "~/" + strings.TrimPrefix(p, strings.TrimSuffix(home, "/")+"/")
	}
	return p
}

// readEntry is a Read path and whether it is one of the profile's
// home-directory reads (dropped in strict mode).
type readEntry struct {
	path        string
	profileHome bool
}

// builder accumulates layers into a Policy.
type builder struct {
	host        Host
	ws          string
	userDisplay string
	profileMode Mode

	p         *Policy
	read      []readEntry
	userAllow []string // network.allow entries from non-profile layers
	logFile   string
}

// loosen is the error for a file inside the workspace setting key (what
// names the offending setting, e.g. "sandbox.mode: off").
func (b *builder) loosen(l layer, key, what string) error {
	hint := "put it in " + b.userDisplay
	if f := config.FlagFor(key); f != "" {
		hint += " or pass " + f
	}
	return l.Errorf(key, "%s cannot be set by a file inside the workspace: such files may only add restrictions; %s", what, hint)
}

var modeRank = map[Mode]int{ModeOff: 0, ModePermissive: 1, ModeStandard: 2, ModeStrict: 3}
var violationRank = map[string]int{"log": 0, "warn": 1, "block": 2}

func checkEnum(l layer, key, val string, allowed []string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	return l.Errorf(key, "%s must be one of %s, not %q", l.Name(key), strings.Join(allowed, ", "), val)
}

// apply merges one layer into the policy.
func (b *builder) apply(l layer) error {
	for _, step := range []func(layer) error{
		b.applyMode, b.applyFilesystem, b.applyNetwork, b.applyResources,
		b.applyMisc, b.applyAudit, b.applyEnv,
	} {
		if err := step(l); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) applyMode(l layer) error {
	var m Mode
	set := false
	if l.Mode != nil {
		if err := checkEnum(l, config.KeyMode, *l.Mode, config.Modes); err != nil {
			return err
		}
		m, set = Mode(*l.Mode), true
	}
	if l.Enabled != nil {
		switch {
		case !*l.Enabled && set && m != ModeOff:
			return l.Errorf(config.KeyEnabled, "%s: false contradicts %s: %s; remove one of them", l.Name(config.KeyEnabled), l.Name(config.KeyMode), m)
		case *l.Enabled && set && m == ModeOff:
			return l.Errorf(config.KeyEnabled, "%s: true contradicts %s: off; remove one of them", l.Name(config.KeyEnabled), l.Name(config.KeyMode))
		case !*l.Enabled:
			if l.tighten {
				return b.loosen(l, config.KeyEnabled, config.KeyEnabled+": false")
			}
			m, set = ModeOff, true
		case !set && b.p.Mode == ModeOff:
			m, set = b.profileMode, true
		}
	}
	if !set {
		return nil
	}
	if l.tighten && modeRank[m] < modeRank[b.p.Mode] {
		return b.loosen(l, config.KeyMode, fmt.Sprintf("%s: %s (weaker than the current %s)", config.KeyMode, m, b.p.Mode))
	}
	b.p.Mode = m
	return nil
}

// vars are the ${VAR} expansions.
func (b *builder) vars() map[string]string {
	return map[string]string{
		"PROJECT_DIR":   b.ws,
		"HOME":          b.host.Home,
		"TMPDIR":        SandboxTmpDir,
		"CWD":           b.host.Cwd,
		"SANDBOX_CACHE": SandboxCache(b.host, b.ws),
	}
}

// expand replaces ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD},
// ${SANDBOX_CACHE} and a leading
// ~ or ~/ in s.
func (b *builder) expand(s string) (string, error) {
	if s == "~" || strings.HasPrefix(s, "~/") {
		s = "${HOME}" + s[1:]
	} else if strings.HasPrefix(s, "~") {
		return "", fmt.Errorf("only a leading ~ or ~/ is expanded (~user is not supported)")
	}
	vars := b.vars()
	var out strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ (write ${NAME})")
		}
		name := s[i+2 : i+j]
		v, ok := vars[name]
		if !ok {
			return "", fmt.Errorf("unknown variable ${%s}; the known ones are ${PROJECT_DIR}, ${HOME}, ${TMPDIR}, ${CWD} and ${SANDBOX_CACHE}", name)
		}
		out.WriteString(s[:i])
		out.WriteString(v)
		s = s[i+j+1:]
	}
}

// entryName names list entry raw of key for messages.
func entryName(l layer, key, raw string) string {
	if l.IsFlags() {
		return fmt.Sprintf("%s %q", l.Name(key), raw)
	}
	return fmt.Sprintf("%s entry %q", config.BaseKey(key), raw)
}

// path expands and checks one path (not a glob) of entry key (which may
// carry an index) in layer l.
func (b *builder) path(l layer, key, raw string) (string, error) {
	s, err := b.expand(raw)
	if err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	if hasMeta(s) {
		return "", l.Errorf(key, "%s: wildcards (* ? [ {) are only allowed in %s and %s", entryName(l, key, raw), config.KeyFilesystemDeny, config.KeyFilesystemDenyWrite)
	}
	if !filepath.IsAbs(s) {
		if !l.IsFlags() {
			return "", l.Errorf(key, "%s is a relative path; use an absolute path or ${PROJECT_DIR}/...", entryName(l, key, raw))
		}
		s = filepath.Join(b.host.Cwd, s)
	}
	return filepath.Clean(s), nil
}

// pattern expands and checks one deny or deny_write entry: an absolute path
// or glob (cleaned), or a relative pattern matched inside every root.
func (b *builder) pattern(l layer, key, raw string) (string, error) {
	s, err := b.expand(raw)
	if err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	glob := hasMeta(s)
	if err := checkGlob(s); err != nil {
		return "", l.Errorf(key, "%s: %v", entryName(l, key, raw), err)
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s), nil
	}
	if l.IsFlags() && !glob {
		return filepath.Join(b.host.Cwd, s), nil
	}
	c := filepath.Clean(s)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", l.Errorf(key, "%s is not a usable pattern; use an absolute path, ${PROJECT_DIR}/..., or a pattern such as **/.env", entryName(l, key, raw))
	}
	return c, nil
}

// hasMeta reports whether s contains glob syntax.
func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[{") }

// checkGlob rejects unbalanced [ ] and { } in a glob.
func checkGlob(s string) error {
	inClass, braces := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '{':
			braces++
		case c == '}':
			if braces == 0 {
				return fmt.Errorf("unbalanced } in pattern")
			}
			braces--
		}
	}
	if inClass {
		return fmt.Errorf("unbalanced [ in pattern (a [ must be closed by ])")
	}
	if braces > 0 {
		return fmt.Errorf("unbalanced { in pattern (a { must be closed by })")
	}
	return nil
}

func (b *builder) applyFilesystem(l layer) error {
	fsys := l.Filesystem
	if l.tighten {
		if len(fsys.Read) > 0 {
			return b.loosen(l, config.KeyFilesystemRead, config.KeyFilesystemRead)
		}
		if len(fsys.Write) > 0 {
			return b.loosen(l, config.KeyFilesystemWrite, config.KeyFilesystemWrite)
		}
	}
	for i, raw := range fsys.Read {
		key := config.EntryKey(config.KeyFilesystemRead, i)
		p, err := b.path(l, key, raw)
		if err != nil {
			return err
		}
		home := l.profile && (strings.HasPrefix(raw, "${HOME}") || strings.HasPrefix(raw, "~"))
		b.read = append(b.read, readEntry{p, home})
	}
	for i, raw := range fsys.Write {
		p, err := b.path(l, config.EntryKey(config.KeyFilesystemWrite, i), raw)
		if err != nil {
			return err
		}
		b.p.Write = append(b.p.Write, p)
	}
	for i, raw := range fsys.Deny {
		p, err := b.pattern(l, config.EntryKey(config.KeyFilesystemDeny, i), raw)
		if err != nil {
			return err
		}
		b.p.Deny = append(b.p.Deny, p)
	}
	for i, raw := range fsys.DenyWrite {
		p, err := b.pattern(l, config.EntryKey(config.KeyFilesystemDenyWrite, i), raw)
		if err != nil {
			return err
		}
		b.p.DenyWrite = append(b.p.DenyWrite, p)
	}
	for i, raw := range l.UnixSockets {
		if l.tighten {
			return b.loosen(l, config.KeyUnixSockets, config.KeyUnixSockets)
		}
		p, err := b.path(l, config.EntryKey(config.KeyUnixSockets, i), raw)
		if err != nil {
			return err
		}
		b.p.UnixSockets = append(b.p.UnixSockets, p)
	}
	return nil
}

// checkHost validates a HOST[:PORT] pattern of network.allow or deny.
func checkHost(l layer, key, raw string) error {
	switch {
	case raw == "" || strings.ContainsAny(raw, " \t\r\n"):
		return l.Errorf(key, "%s must be HOST or HOST:PORT without spaces, like \"*.example.com:443\"", entryName(l, key, raw))
	case strings.Contains(raw, "/"):
		return l.Errorf(key, "%s must be HOST or HOST:PORT, not a URL or path, like \"*.example.com:443\"", entryName(l, key, raw))
	}
	return nil
}

func (b *builder) applyNetwork(l layer) error {
	n := l.Network
	var m NetMode
	set := false
	if n.Mode != nil {
		if err := checkEnum(l, config.KeyNetworkMode, *n.Mode, config.NetworkModes); err != nil {
			return err
		}
		m, set = NetMode(*n.Mode), true
	}
	if n.Enabled != nil {
		switch {
		case !*n.Enabled && set && m != NetDeny:
			return l.Errorf(config.KeyNetworkEnabled, "%s: false contradicts %s: %s; remove one of them", l.Name(config.KeyNetworkEnabled), l.Name(config.KeyNetworkMode), m)
		case *n.Enabled && set && m == NetDeny:
			return l.Errorf(config.KeyNetworkEnabled, "%s: true contradicts %s: deny; remove one of them", l.Name(config.KeyNetworkEnabled), l.Name(config.KeyNetworkMode))
		case !*n.Enabled:
			m, set = NetDeny, true
		case !set:
			if l.tighten {
				return b.loosen(l, config.KeyNetworkEnabled, config.KeyNetworkEnabled+": true")
			}
			m, set = NetOpen, true
		}
	}
	if l.tighten {
		if set && m != NetDeny {
			return b.loosen(l, config.KeyNetworkMode, fmt.Sprintf("%s: %s", config.KeyNetworkMode, m))
		}
		if len(n.Allow) > 0 {
			return b.loosen(l, config.KeyNetworkAllow, config.KeyNetworkAllow)
		}
		if len(n.ForwardPorts) > 0 {
			return b.loosen(l, config.KeyNetworkForwardPort, config.KeyNetworkForwardPort)
		}
	}
	for i, raw := range n.Allow {
		if err := checkHost(l, config.EntryKey(config.KeyNetworkAllow, i), raw); err != nil {
			return err
		}
	}
	for i, raw := range n.Deny {
		if err := checkHost(l, config.EntryKey(config.KeyNetworkDeny, i), raw); err != nil {
			return err
		}
	}
	for i, port := range n.ForwardPorts {
		if port < 1 || port > 65535 {
			key := config.EntryKey(config.KeyNetworkForwardPort, i)
			return l.Errorf(key, "%s must be a TCP port from 1 to 65535, not %d", l.Name(key), port)
		}
	}
	if len(n.Allow) > 0 {
		if set && m == NetDeny {
			return l.Errorf(config.KeyNetworkAllow, "%s has entries but the same %s denies the network; remove one of them", l.Name(config.KeyNetworkAllow), sourceWord(l))
		}
		m, set = NetFiltered, true
		if !l.profile {
			b.userAllow = append(b.userAllow, n.Allow...)
		}
	}
	if set {
		b.p.Network.Mode = m
	}
	b.p.Network.Allow = append(b.p.Network.Allow, n.Allow...)
	b.p.Network.Deny = append(b.p.Network.Deny, n.Deny...)
	b.p.Network.ForwardPorts = append(b.p.Network.ForwardPorts, n.ForwardPorts...)
	return nil
}

func sourceWord(l layer) string {
	if l.IsFlags() {
		return "command line"
	}
	return "file"
}

func (b *builder) applyResources(l layer) error {
	r := &b.p.Resources
	for _, x := range []struct {
		key  string
		val  *int
		dst  *int
		rng  [2]int
		unit string
	}{
		{config.KeyMaxProcesses, l.Resources.MaxProcesses, &r.MaxProcesses, MaxProcessesRange, "processes"},
		{config.KeyMaxMemoryMB, l.Resources.MaxMemoryMB, &r.MaxMemoryMB, MaxMemoryMBRange, "MB"},
		{config.KeyMaxCPUSeconds, l.Resources.MaxCPUSeconds, &r.MaxCPUSeconds, MaxCPUSecondsRange, "seconds"},
		{config.KeyMaxFileSizeMB, l.Resources.MaxFileSizeMB, &r.MaxFileSizeMB, MaxFileSizeMBRange, "MB"},
	} {
		if x.val == nil {
			continue
		}
		v := *x.val
		if !l.profile && (v < x.rng[0] || v > x.rng[1]) {
			return l.Errorf(x.key, "%s must be from %d to %d %s, not %d", l.Name(x.key), x.rng[0], x.rng[1], x.unit, v)
		}
		if l.tighten && *x.dst != 0 && v > *x.dst {
			return b.loosen(l, x.key, fmt.Sprintf("%s: %d (above the current %d)", x.key, v, *x.dst))
		}
		*x.dst = v
	}
	return nil
}

func (b *builder) applyMisc(l layer) error {
	if l.Timeout != nil {
		d := *l.Timeout
		if d <= 0 {
			return l.Errorf(config.KeyTimeout, "%s must be longer than zero, not %s", l.Name(config.KeyTimeout), d)
		}
		if l.tighten && b.p.Timeout != 0 && d > b.p.Timeout {
			return b.loosen(l, config.KeyTimeout, fmt.Sprintf("%s: %s (longer than the current %s)", config.KeyTimeout, d, b.p.Timeout))
		}
		b.p.Timeout = d
	}
	if l.OnViolation != nil {
		v := *l.OnViolation
		if err := checkEnum(l, config.KeyOnViolation, v, config.OnViolationValues); err != nil {
			return err
		}
		if l.tighten && b.p.OnViolation != "" && violationRank[v] < violationRank[b.p.OnViolation] {
			return b.loosen(l, config.KeyOnViolation, fmt.Sprintf("%s: %s (weaker than the current %s)", config.KeyOnViolation, v, b.p.OnViolation))
		}
		b.p.OnViolation = v
	}
	if l.Backend != nil {
		if l.tighten {
			return b.loosen(l, config.KeyBackend, config.KeyBackend)
		}
		if err := checkEnum(l, config.KeyBackend, *l.Backend, config.Backends); err != nil {
			return err
		}
		b.p.Backend = *l.Backend
	}
	if l.BwrapPath != nil {
		if l.tighten {
			return b.loosen(l, config.KeyBwrapPath, config.KeyBwrapPath)
		}
		raw := *l.BwrapPath
		s, err := b.expand(raw)
		if err != nil {
			return l.Errorf(config.KeyBwrapPath, "%s %q: %v", l.Name(config.KeyBwrapPath), raw, err)
		}
		if !filepath.IsAbs(s) {
			return l.Errorf(config.KeyBwrapPath, "%s %q must be an absolute path, like \"/usr/bin/bwrap\"", l.Name(config.KeyBwrapPath), raw)
		}
		b.p.BwrapPath = filepath.Clean(s)
	}
	return nil
}

func (b *builder) applyAudit(l layer) error {
	a := l.Audit
	if l.tighten {
		switch {
		case a.Enabled != nil && !*a.Enabled:
			return b.loosen(l, config.KeyAuditEnabled, config.KeyAuditEnabled+": false")
		case a.LogDenied != nil && !*a.LogDenied:
			return b.loosen(l, config.KeyAuditLogDenied, config.KeyAuditLogDenied+": false")
		case a.LogAllowed != nil:
			return b.loosen(l, config.KeyAuditLogAllowed, config.KeyAuditLogAllowed)
		case a.LogFile != nil:
			return b.loosen(l, config.KeyAuditLogFile, config.KeyAuditLogFile)
		}
	}
	if a.Enabled != nil {
		b.p.Audit.Enabled = *a.Enabled
	}
	if a.LogAllowed != nil {
		b.p.Audit.LogAllowed = *a.LogAllowed
	}
	if a.LogDenied != nil {
		b.p.Audit.LogDenied = *a.LogDenied
	}
	if a.LogFile != nil {
		p, err := b.path(l, config.KeyAuditLogFile, *a.LogFile)
		if err != nil {
			return err
		}
		b.logFile = p
	}
	return nil
}

// validEnvName reports whether s is a valid environment variable name.
func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func (b *builder) applyEnv(l layer) error {
	if l.tighten && len(l.Env) > 0 {
		return b.loosen(l, config.KeyEnv, config.KeyEnv)
	}
	for i, e := range l.Env {
		key := config.EntryKey(config.KeyEnv, i)
		name, value, isSet := strings.Cut(e, "=")
		if isSet {
			if !validEnvName(name) {
				return l.Errorf(key, "%s: %q is not a valid variable name (letters, digits and _, not starting with a digit)", entryName(l, key, e), name)
			}
			if name == "TMPDIR" && value != SandboxTmpDir {
				return l.Errorf(key, "%s: TMPDIR is always %s inside the sandbox (its /tmp is private); remove this entry", entryName(l, key, e), SandboxTmpDir)
			}
			b.p.Env.Set[name] = value
			continue
		}
		prefix, _ := strings.CutSuffix(name, "*")
		if !validEnvName(prefix) {
			return l.Errorf(key, "%s is not a valid variable name (letters, digits and _, not starting with a digit; a trailing * passes every name with that prefix); write NAME or NAME=VALUE", entryName(l, key, e))
		}
		b.p.Env.Pass = append(b.p.Env.Pass, name)
	}
	return nil
}

// finish applies strict mode and the defaults and de-duplicates lists.
func (b *builder) finish() *Policy {
	p := b.p
	strict := p.Mode == ModeStrict
	for _, r := range b.read {
		if strict && r.profileHome {
			continue
		}
		p.Read = append(p.Read, r.path)
	}
	if strict {
		if p.Network.Mode == NetFiltered && len(b.userAllow) > 0 {
			p.Network.Allow = b.userAllow
		} else {
			p.Network.Mode = NetDeny
		}
	}
	// The user config directory stays read-only even when the workspace
	// contains it (e.g. --workspace ~): the sandbox must not loosen its
	// own next run.
	p.DenyWrite = append(p.DenyWrite, filepath.Join(b.host.configHome(), "cordon"))
	p.Protected = slices.Clone(Protected)
	p.SandboxCache = SandboxCache(b.host, b.ws)
	if strict {
		// Untrusted commands get no cache that outlives the run: what
		// they left there would be used by the workspace's next runs.
		p.Write = slices.DeleteFunc(p.Write, func(w string) bool { return w == p.SandboxCache })
	}
	p.Audit.LogFile = b.logFile
	if p.Audit.LogFile == "" {
		p.Audit.LogFile = DefaultAuditLog(b.host)
	}
	p.Read = dedup(p.Read)
	p.Write = dedup(p.Write)
	p.Deny = dedup(p.Deny)
	p.DenyWrite = dedup(p.DenyWrite)
	p.UnixSockets = dedup(p.UnixSockets)
	p.Network.Allow = dedup(p.Network.Allow)
	p.Network.Deny = dedup(p.Network.Deny)
	p.Network.ForwardPorts = dedup(p.Network.ForwardPorts)
	p.Env.Pass = dedup(p.Env.Pass)
	return p
}

// dedup removes repeated elements, keeping the first of each, and never
// returns nil.
func dedup[T comparable](in []T) []T {
	out := make([]T, 0, len(in))
	seen := make(map[T]bool, len(in))
	for _, x := range in {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
