package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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
	// XDGConfigHome is the base of the user config file; "" (or a
	// relative path) means $XDG_CONFIG_HOME from Getenv if absolute, else
	// Home/.config.
	XDGConfigHome string
	// XDGCacheHome is the base of ${SANDBOX_CACHE}; "" (or a relative
	// path) means $XDG_CACHE_HOME from Getenv if absolute, else
	// Home/.cache.
	XDGCacheHome string
	// XDGStateHome is the base of the default audit log; "" (or a
	// relative path) means $XDG_STATE_HOME from Getenv if absolute, else
	// Home/.local/state.
	XDGStateHome string
	// Getenv looks up a host environment variable; nil means none are set.
	Getenv func(string) (string, bool)
	// Environ lists the host's environment as NAME=VALUE, for settings
	// found by prefix (cargo's CARGO_REGISTRIES_*_INDEX); nil means none.
	Environ func() []string
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
	return Host{Home: home, Cwd: cwd, Getenv: os.LookupEnv, Environ: os.Environ}, nil
}

// UserConfigPath returns the user config file Load reads:
// $XDG_CONFIG_HOME/cordon/config.yaml, by default ~/.config/cordon/config.yaml.
func UserConfigPath(h Host) string {
	return filepath.Join(h.configHome(), "cordon", "config.yaml")
}

// DefaultAuditLog returns the default audit log:
// $XDG_STATE_HOME/cordon/audit.jsonl, by default
// ~/.local/state/cordon/audit.jsonl.
func DefaultAuditLog(h Host) string {
	return filepath.Join(h.StateDir(), "audit.jsonl")
}

// StateDir is where cordon keeps its own files (deny masks, locks,
// journals, the Landlock-only backend's private directories):
// $XDG_STATE_HOME/cordon, by default ~/.local/state/cordon. The CLI, the
// MCP server and the library all use it; it is never visible inside a
// sandbox.
func (h Host) StateDir() string { return filepath.Join(h.stateHome(), "cordon") }

// xdg returns an XDG base directory: field if set, else the variable env
// from Getenv, else def under Home. A relative value is ignored, as the
// XDG Base Directory specification says.
func (h Host) xdg(field, env, def string) string {
	if filepath.IsAbs(field) {
		return filepath.Clean(field)
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
	return filepath.Join(SandboxCacheRoot(h), SandboxCacheName(workspace))
}

// SandboxCacheRoot is the directory of every workspace's sandbox cache:
// $XDG_CACHE_HOME/cordon/sandbox, by default ~/.cache/cordon/sandbox.
func SandboxCacheRoot(h Host) string {
	return filepath.Join(h.cacheHome(), "cordon", "sandbox")
}

// GoModCacheDir is, for the sandbox cache dir (SandboxCache), the Go
// module cache the bwrap backend shows at the host's module cache path:
// $XDG_CACHE_HOME/cordon/gomod/NAME, beside the sandbox caches rather than
// in one, so that no sandbox can replace it (a sandbox may change what is
// in its cache, and a link it left there would be bound, writable,
// wherever it points).
func GoModCacheDir(sandboxCache string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(sandboxCache)), "gomod", filepath.Base(sandboxCache))
}

// SandboxCacheName is the name of a workspace's sandbox cache in
// SandboxCacheRoot: 24 hexadecimal digits of the SHA-256 of its path.
func SandboxCacheName(workspace string) string {
	sum := sha256.Sum256([]byte(workspace))
	return hex.EncodeToString(sum[:12])
}
func (h Host) stateHome() string {
	return h.xdg(h.XDGStateHome, "XDG_STATE_HOME", filepath.Join(".local", "state"))
}
