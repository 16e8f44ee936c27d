package policy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/config"
)

// Resource limit ranges accepted from config files and flags (a profile's 0
// means unlimited).
var (
	// MaxProcessesRange is the range of resources.max_processes.
	MaxProcessesRange = [2]int{1, 1000000}
	// MaxMemoryMBRange is the range of resources.max_memory_mb.
	MaxMemoryMBRange = [2]int{16, 1048576}
	// MaxCPUSecondsRange is the range of resources.max_cpu_seconds.
	MaxCPUSecondsRange = [2]int{1, 31536000}
	// AuditMaxSizeMBRange is the range of audit.max_size_mb (0: never
	// rotate).
	AuditMaxSizeMBRange = [2]int{0, 1048576}
	// DefaultAuditMaxSizeMB is audit.max_size_mb when no layer sets it.
	DefaultAuditMaxSizeMB = 10
	// MaxFileSizeMBRange is the range of resources.max_file_size_mb.
	MaxFileSizeMBRange = [2]int{1, 4194304}
)

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
	net       netState // what finishNetwork needs to know (network.go)
	logFile   string
	varsCache map[string]string // see vars

	flagPaths []flagPath // --allow-read and --allow-write values (flagWarnings)
	wsDenied  error      // a deny entry that hides the workspace
}

// loosen is the error for a tighten-only file (inside the workspace or
// another writable root) setting key (what names the offending setting,
// e.g. "sandbox.mode: off").
func (b *builder) loosen(l layer, key, what string) error {
	where, hint := "a file inside the workspace", "put it in "+b.userDisplay
	if l.root != "" {
		where = "a file inside " + l.root + ", which the sandbox may write"
	}
	if l.user {
		hint = "keep your config file out of the directories the sandbox may write"
	}
	if f := config.FlagFor(key); f != "" {
		hint += " or pass " + f
	}
	return l.Errorf(key, "%s cannot be set by %s: such files may only add restrictions; %s", what, where, hint)
}

var modeRank = map[Mode]int{ModeOff: 0, ModePermissive: 1, ModeStandard: 2, ModeStrict: 3}
var violationRank = map[string]int{"log": 0, "warn": 1, "block": 2}

// checkEnum checks that val, of key in layer l, is one of allowed. The
// message repeats a value given as a flag, never one from a file (see
// config.Parse).
func checkEnum(l layer, key, val string, allowed []string) error {
	if slices.Contains(allowed, val) {
		return nil
	}
	if !l.IsFlags() {
		return l.Errorf(key, "%s must be one of %s", l.Name(key), strings.Join(allowed, ", "))
	}
	return l.Errorf(key, "%s must be one of %s, not %q", l.Name(key), strings.Join(allowed, ", "), val)
}

// apply merges one layer into the policy.
func (b *builder) apply(l layer) error {
	for _, step := range []func(layer) error{
		b.applyMode, b.applyFilesystem, b.applyNetwork, b.applyResources,
		b.applyMisc, b.applyAudit, b.applyEnv, b.applyCredentials,
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
		b.noteFlagPath(l, key, raw, p, false)
	}
	for i, raw := range fsys.Write {
		key := config.EntryKey(config.KeyFilesystemWrite, i)
		p, err := b.path(l, key, raw)
		if err != nil {
			return err
		}
		b.p.Write = append(b.p.Write, p)
		b.noteFlagPath(l, key, raw, p, true)
	}
	for i, raw := range fsys.Deny {
		key := config.EntryKey(config.KeyFilesystemDeny, i)
		p, err := b.pattern(l, key, raw)
		if err != nil {
			return err
		}
		b.p.Deny = append(b.p.Deny, p)
		b.checkDenyWorkspace(l, key, raw, p)
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
		b.p.Backend = backend.Name(*l.Backend)
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
		if !IsAbs(s) {
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
		case a.MaxSizeMB != nil && *a.MaxSizeMB != 0 && (b.p.Audit.MaxSizeMB == 0 || *a.MaxSizeMB < b.p.Audit.MaxSizeMB):
			// A smaller log keeps less: rotation would remove records sooner.
			cur := fmt.Sprintf("below the current %d", b.p.Audit.MaxSizeMB)
			if b.p.Audit.MaxSizeMB == 0 {
				cur = "the current 0 never rotates"
			}
			return b.loosen(l, config.KeyAuditMaxSizeMB, fmt.Sprintf("%s: %d (%s)", config.KeyAuditMaxSizeMB, *a.MaxSizeMB, cur))
		}
	}
	if a.MaxSizeMB != nil {
		v, rng := *a.MaxSizeMB, AuditMaxSizeMBRange
		if v < rng[0] || v > rng[1] {
			return l.Errorf(config.KeyAuditMaxSizeMB, "%s must be from %d to %d MB (0: never rotate), not %d", l.Name(config.KeyAuditMaxSizeMB), rng[0], rng[1], v)
		}
		b.p.Audit.MaxSizeMB = v
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

// finish applies strict mode and the defaults, de-duplicates lists and
// settles the network (see finishNetwork).
func (b *builder) finish() (*Policy, error) {
	p := b.p
	strict := p.Mode == ModeStrict
	for _, r := range b.read {
		if strict && r.profileHome {
			continue
		}
		p.Read = append(p.Read, r.path)
	}
	// The user config directory stays read-only even when the workspace
	// contains it (e.g. --workspace ~): the sandbox must not loosen its
	// own next run.
	p.DenyWrite = append(p.DenyWrite, filepath.Join(b.host.configHome(), "cordon"))
	// What a run must never be able to change, whatever the backend: the
	// paths that decide later runs or run code later (HomeProtected) and
	// cordon's own config.
	p.Guarded = []string{filepath.Join(b.host.configHome(), "cordon")}
	for _, h := range HomeProtected {
		if e, err := b.expand(h); err == nil {
			p.Guarded = append(p.Guarded, e)
		}
	}
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
	p.Env.Pass = dedup(p.Env.Pass)
	if err := b.finishCredentials(); err != nil {
		return nil, err
	}
	p.Deny = dedup(p.Deny)
	if err := b.finishNetwork(); err != nil {
		return nil, err
	}
	return p, nil
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
