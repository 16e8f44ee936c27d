// Package config parses cordon's YAML configuration files (and holds the
// settings given as command-line flags) as Layers: partial, unexpanded sets
// of settings in which every field is optional. A Layer remembers where each
// key was set, so that any later error can name the file and line, or the
// flag, it came from.
//
// A config file has one top-level key, "sandbox", whose keys are those of
// cordon's configuration contract (docs/configuration.md):
//
//	sandbox:
//	  enabled: true             # false means mode off
//	  mode: standard            # off | permissive | standard | strict
//	  profile: development      # minimal | development | ci | untrusted
//	  filesystem: {read: [...], write: [...], deny: [...], deny_write: [...]}
//	  network: {enabled: true, mode: open, allow: [...], deny: [...], forward_ports: [8080]}
//	  resources: {max_processes: 100, max_memory_mb: 2048, max_cpu_seconds: 300, max_file_size_mb: 100}
//	  on_violation: block       # block | warn | log
//	  audit: {enabled: true, log_file: ..., log_allowed: false, log_denied: true, max_size_mb: 10}
//	  timeout: 90s
//	  backend: auto             # auto | bwrap | landlock | seatbelt | none
//	  bwrap_path: /usr/bin/bwrap
//	  unix_sockets: [/run/user/1000/docker.sock]
//	  env: [GOFLAGS, "CI=1"]
//	  credentials: [{name: github}, {name: api, hosts: [api.example.com], env: API_TOKEN}]
//
// Parsing checks syntax, types and enumerated values only; paths are
// expanded and ranges checked by package policy, which reports problems
// through Layer.Errorf.
//
// The package owns the file format and the reading of files (bounded, no
// FIFO waited on, no link followed below a writable directory). It must not
// merge layers, expand paths or decide what a setting allows: that is
// package policy.
package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
)

// SourceFlags is the Source of the Layer built from command-line flags.
const SourceFlags = "flags"

// Keys of a config file, in their dotted form. They index Layer.Lines and
// Layer.Where and appear in error messages.
const (
	KeyEnabled             = "sandbox.enabled"
	KeyMode                = "sandbox.mode"
	KeyProfile             = "sandbox.profile"
	KeyFilesystemRead      = "sandbox.filesystem.read"
	KeyFilesystemWrite     = "sandbox.filesystem.write"
	KeyFilesystemDeny      = "sandbox.filesystem.deny"
	KeyFilesystemDenyWrite = "sandbox.filesystem.deny_write"
	KeyNetworkEnabled      = "sandbox.network.enabled"
	KeyNetworkMode         = "sandbox.network.mode"
	KeyNetworkAllow        = "sandbox.network.allow"
	KeyNetworkDeny         = "sandbox.network.deny"
	KeyNetworkForwardPort  = "sandbox.network.forward_ports"
	KeyMaxProcesses        = "sandbox.resources.max_processes"
	KeyMaxMemoryMB         = "sandbox.resources.max_memory_mb"
	KeyMaxCPUSeconds       = "sandbox.resources.max_cpu_seconds"
	KeyMaxFileSizeMB       = "sandbox.resources.max_file_size_mb"
	KeyOnViolation         = "sandbox.on_violation"
	KeyAuditEnabled        = "sandbox.audit.enabled"
	KeyAuditLogFile        = "sandbox.audit.log_file"
	KeyAuditLogAllowed     = "sandbox.audit.log_allowed"
	KeyAuditLogDenied      = "sandbox.audit.log_denied"
	KeyAuditMaxSizeMB      = "sandbox.audit.max_size_mb"
	KeyTimeout             = "sandbox.timeout"
	KeyBackend             = "sandbox.backend"
	KeyBwrapPath           = "sandbox.bwrap_path"
	KeyUnixSockets         = "sandbox.unix_sockets"
	KeyEnv                 = "sandbox.env"
	KeyCredentials         = "sandbox.credentials"
)

// Allowed values of the enumerated keys.
var (
	// Modes are the values of sandbox.mode.
	Modes = []string{"off", "permissive", "standard", "strict"}
	// ProfileNames are the values of sandbox.profile.
	ProfileNames = []string{"minimal", "development", "ci", "untrusted"}
	// NetworkModes are the values of sandbox.network.mode.
	NetworkModes = []string{"deny", "open", "loopback"}
	// OnViolationValues are the values of sandbox.on_violation.
	OnViolationValues = []string{"block", "warn", "log"}
	// Backends are the values of sandbox.backend.
	Backends = backend.Names()
)

// flagNames maps keys to the command-line flag that sets them (cordon run
// --help lists the flags). Keys without a flag are absent.
var flagNames = map[string]string{
	KeyEnabled:             "--no-sandbox",
	KeyMode:                "--mode",
	KeyProfile:             "--profile",
	KeyFilesystemRead:      "--allow-read",
	KeyFilesystemWrite:     "--allow-write",
	KeyFilesystemDeny:      "--deny",
	KeyFilesystemDenyWrite: "--deny-write",
	KeyNetworkMode:         "--net",
	KeyNetworkEnabled:      "--net",
	KeyNetworkAllow:        "--allow-net",
	KeyNetworkDeny:         "--deny-net",
	KeyNetworkForwardPort:  "--forward-port",
	KeyMaxProcesses:        "--max-procs",
	KeyMaxMemoryMB:         "--max-memory",
	KeyMaxCPUSeconds:       "--max-cpu",
	KeyMaxFileSizeMB:       "--max-file-size",
	KeyTimeout:             "--timeout",
	KeyBackend:             "--backend",
	KeyAuditLogFile:        "--audit-log",
	KeyUnixSockets:         "--allow-unix-socket",
	KeyEnv:                 "--env",
	KeyCredentials:         "--credential",
}

// FlagFor returns the command-line flag that sets key (e.g. "--max-memory"
// for KeyMaxMemoryMB), or "" if no flag sets it. An index suffix ("[2]")
// on key is ignored.
func FlagFor(key string) string {
	return flagNames[BaseKey(key)]
}

// BaseKey strips a list index ("sandbox.filesystem.read[2]" becomes
// "sandbox.filesystem.read").
func BaseKey(key string) string {
	if i := strings.IndexByte(key, '['); i >= 0 {
		return key[:i]
	}
	return key
}

// EntryKey returns the key of entry i of the list key, as used in
// Layer.Lines ("sandbox.filesystem.read[2]").
func EntryKey(key string, i int) string {
	return fmt.Sprintf("%s[%d]", key, i)
}

// Layer is one partial set of settings: a config file, the flags, or a
// built-in profile. A nil pointer or nil slice means "not set here".
// Values are as written: ${VAR} and ~ are not expanded and ranges are not
// checked (package policy does both).
type Layer struct {
	// Source is the file the layer was read from, SourceFlags for the
	// command line, or "profile NAME" for a built-in profile.
	Source string

	// Enabled is sandbox.enabled; false means mode off.
	Enabled *bool
	// Mode is sandbox.mode: off, permissive, standard or strict.
	Mode *string
	// Profile is sandbox.profile.
	Profile *string
	// Filesystem is sandbox.filesystem.
	Filesystem Filesystem
	// Network is sandbox.network.
	Network Network
	// Resources is sandbox.resources.
	Resources Resources
	// OnViolation is sandbox.on_violation: block, warn or log.
	OnViolation *string
	// Audit is sandbox.audit.
	Audit Audit
	// Timeout is sandbox.timeout.
	Timeout *time.Duration
	// Backend is sandbox.backend: auto, bwrap, landlock, seatbelt, job or none.
	Backend *string
	// BwrapPath is sandbox.bwrap_path.
	BwrapPath *string
	// UnixSockets is sandbox.unix_sockets.
	UnixSockets []string
	// Env is sandbox.env: entries "NAME" (pass the host's value) or
	// "NAME=VALUE" (set it).
	Env []string
	// Credentials is sandbox.credentials: secrets the host-side proxy
	// puts into requests to their hosts (a flags layer's entries carry
	// only a name, from --credential).
	Credentials []Credential

	// Lines maps each key set in a file (e.g. KeyFilesystemRead) to the
	// line of the key, and each list entry (EntryKey(key, i)) to its line.
	Lines map[string]int
	// Where maps a key to the flag that set it, for a flags layer, when it
	// differs from FlagFor(key) (e.g. "--sandbox" for KeyMode).
	Where map[string]string
}

// Filesystem is sandbox.filesystem.
type Filesystem struct {
	// Read is filesystem.read: paths that may be read.
	Read []string
	// Write is filesystem.write: paths that may be written.
	Write []string
	// Deny is filesystem.deny: paths or globs that may be neither read nor
	// written.
	Deny []string
	// DenyWrite is filesystem.deny_write: paths or globs that stay
	// read-only.
	DenyWrite []string
}

// Network is sandbox.network.
type Network struct {
	// Enabled is network.enabled; false means mode deny, true without a
	// mode means open.
	Enabled *bool
	// Mode is network.mode: deny, open or loopback.
	Mode *string
	// Allow is network.allow: HOST[:PORT] patterns.
	Allow []string
	// Deny is network.deny: HOST[:PORT] patterns.
	Deny []string
	// ForwardPorts is network.forward_ports: host loopback TCP ports.
	ForwardPorts []int
}

// Credential is one entry of sandbox.credentials. Every field but Name is
// optional here: an entry naming a preset takes the rest from it.
type Credential struct {
	// Name names the credential (a preset's name: github, npm, pypi).
	Name *string
	// Hosts are the network entries of the hosts it belongs to.
	Hosts []string
	// Env names the variables of cordon's own environment that hold the
	// secret (the first one set wins); inside, they hold the placeholder.
	Env []string
	// Command is the argv of a command whose output is the secret.
	Command []string
	// File is a file outside the sandbox holding the secret.
	File *string
	// Npmrc takes the secret from ~/.npmrc's _authToken for its host.
	Npmrc *bool
	// Netrc takes the secret from ~/.netrc's password for its host.
	Netrc *bool
	// Headers are the request headers, besides Authorization, the
	// placeholder is replaced in.
	Headers []string
	// Methods and Paths, when set, limit the requests it is used in.
	Methods []string
	Paths   []string
	// GitUsername is the user name git inside sends with the placeholder.
	GitUsername *string
	// Line is the line of the entry in its file (0 for a flag).
	Line int
}

// Resources is sandbox.resources.
type Resources struct {
	// MaxProcesses is resources.max_processes.
	MaxProcesses *int
	// MaxMemoryMB is resources.max_memory_mb.
	MaxMemoryMB *int
	// MaxCPUSeconds is resources.max_cpu_seconds.
	MaxCPUSeconds *int
	// MaxFileSizeMB is resources.max_file_size_mb.
	MaxFileSizeMB *int
}

// Audit is sandbox.audit.
type Audit struct {
	// Enabled is audit.enabled.
	Enabled *bool
	// LogFile is audit.log_file.
	LogFile *string
	// LogAllowed is audit.log_allowed.
	LogAllowed *bool
	// LogDenied is audit.log_denied.
	LogDenied *bool
	// MaxSizeMB is audit.max_size_mb.
	MaxSizeMB *int
}

// NewFlags returns an empty Layer for command-line flags (Source
// SourceFlags).
func NewFlags() *Layer {
	return &Layer{Source: SourceFlags}
}

// Ptr returns a pointer to v; it helps fill in a Layer.
func Ptr[T any](v T) *T { return &v }

// IsFlags reports whether the layer holds command-line flags.
func (l *Layer) IsFlags() bool { return l.Source == SourceFlags }

// SetWhere records that key was set by flag (e.g. "--sandbox" for KeyMode),
// for error messages. It is only needed when the flag differs from
// FlagFor(key).
func (l *Layer) SetWhere(key, flag string) {
	if l.Where == nil {
		l.Where = map[string]string{}
	}
	l.Where[key] = flag
}

// Line returns the line where key (or list entry, "key[i]") was set, falling
// back to the line of the list's key, or 0 if unknown.
func (l *Layer) Line(key string) int {
	if n, ok := l.Lines[key]; ok {
		return n
	}
	return l.Lines[BaseKey(key)]
}

// Name returns how messages should name key: the flag for a flags layer
// (e.g. "--max-memory"), otherwise the dotted key without any index.
func (l *Layer) Name(key string) string {
	base := BaseKey(key)
	if l.IsFlags() {
		if w, ok := l.Where[base]; ok {
			return w
		}
		if f := flagNames[base]; f != "" {
			return f
		}
	}
	return base
}

// Errorf returns an *Error located at key (or list entry "key[i]") of this
// layer: file and line for a file, no location for flags (the message should
// name the flag, see Name).
func (l *Layer) Errorf(key, format string, args ...any) *Error {
	e := &Error{Key: BaseKey(key), Msg: fmt.Sprintf(format, args...)}
	if !l.IsFlags() {
		e.File = l.Source
		e.Line = l.Line(key)
	}
	return e
}

// Error is a configuration error located at a file, line and key.
type Error struct {
	// File is the config file, or "" for command-line flags.
	File string
	// Line is the 1-based line in File, or 0 if unknown.
	Line int
	// Key is the dotted key concerned (e.g. "sandbox.resources.max_memory_mb"),
	// or "" for file-level errors such as invalid YAML.
	Key string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error returns the single line "FILE:LINE: MSG" (or "FILE: MSG" without a
// line, or MSG alone for flags).
func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	case e.File != "":
		return e.File + ": " + e.Msg
	default:
		return e.Msg
	}
}
