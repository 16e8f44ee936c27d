package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"
)

const testFile = "/home/u/.config/cordon/config.yaml"

func TestParseEveryKey(t *testing.T) {
	src := `sandbox:
  enabled: true
  mode: strict
  profile: ci
  filesystem:
    read: ["${PROJECT_DIR}", /usr]
    write:
      - ${PROJECT_DIR}
      - ${TMPDIR}
    deny: ["**/.env"]
    deny_write: [/etc/hosts]
  network:
    enabled: true
    mode: loopback
    allow: ["localhost:*", "*:443"]
    deny: ["169.254.169.254:*"]
    forward_ports: [50051, 8080]
  resources:
    max_processes: 100
    max_memory_mb: 2048
    max_cpu_seconds: 300
    max_file_size_mb: 0x10
  on_violation: warn
  audit:
    enabled: false
    log_file: ~/audit.jsonl
    log_allowed: true
    log_denied: false
  timeout: 1m30s
  backend: bwrap
  bwrap_path: /usr/bin/bwrap
  unix_sockets: [/run/docker.sock]
  env: [GOFLAGS, "CI=1"]
`
	l, err := Parse(testFile, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := &Layer{
		Source:  testFile,
		Enabled: Ptr(true),
		Mode:    Ptr("strict"),
		Profile: Ptr("ci"),
		Filesystem: Filesystem{
			Read:      []string{"${PROJECT_DIR}", "/usr"},
			Write:     []string{"${PROJECT_DIR}", "${TMPDIR}"},
			Deny:      []string{"**/.env"},
			DenyWrite: []string{"/etc/hosts"},
		},
		Network: Network{
			Enabled:      Ptr(true),
			Mode:         Ptr("loopback"),
			Allow:        []string{"localhost:*", "*:443"},
			Deny:         []string{"169.254.169.254:*"},
			ForwardPorts: []int{50051, 8080},
		},
		Resources: Resources{
			MaxProcesses:  Ptr(100),
			MaxMemoryMB:   Ptr(2048),
			MaxCPUSeconds: Ptr(300),
			MaxFileSizeMB: Ptr(16),
		},
		OnViolation: Ptr("warn"),
		Audit: Audit{
			Enabled:    Ptr(false),
			LogFile:    Ptr("~/audit.jsonl"),
			LogAllowed: Ptr(true),
			LogDenied:  Ptr(false),
		},
		Timeout:     Ptr(90 * time.Second),
		Backend:     Ptr("bwrap"),
		BwrapPath:   Ptr("/usr/bin/bwrap"),
		UnixSockets: []string{"/run/docker.sock"},
		Env:         []string{"GOFLAGS", "CI=1"},
	}
	lines := l.Lines
	l.Lines = nil
	if !reflect.DeepEqual(l, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", l, want)
	}
	for key, line := range map[string]int{
		"sandbox":                       1,
		KeyEnabled:                      2,
		KeyFilesystemRead:               6,
		KeyFilesystemWrite:              7,
		EntryKey(KeyFilesystemWrite, 0): 8,
		EntryKey(KeyFilesystemWrite, 1): 9,
		KeyNetworkForwardPort:           17,
		KeyMaxFileSizeMB:                22,
		KeyAuditLogDenied:               28,
		KeyEnv:                          33,
	} {
		if lines[key] != line {
			t.Errorf("Lines[%q] = %d, want %d", key, lines[key], line)
		}
	}
}

// TestParseOriginalFormat accepts the configuration snippets cordon's
// format was first specified with, merged under one sandbox key, as they
// were written.
func TestParseOriginalFormat(t *testing.T) {
	src := `sandbox:
  enabled: true
  mode: "standard"           # off | permissive | standard | strict
  profile: "development"  # Uses predefined development profile
  on_violation: "block"    # block | warn | log

  filesystem:
    # Paths to allow read access
    read:
      - "${PROJECT_DIR}"
      - "/usr"
      - "/bin"
      - "${HOME}/.config/amplifier"

    # Paths to allow write access
    write:
      - "${PROJECT_DIR}"
      - "${TMPDIR}"

    # Paths to explicitly deny (even if parent allowed)
    deny:
      - "${HOME}/.ssh"
      - "${HOME}/.gnupg"
      - "${HOME}/.aws"
      - "**/.env"
      - "**/.env.*"
      - "**/secrets.*"

  network:
    enabled: true            # Allow network access?
    allow:
      - "localhost:*"        # Local services
      - "*:80"               # HTTP
      - "*:443"              # HTTPS
    deny:
      - "169.254.169.254:*"  # AWS metadata
      - "metadata.google.*"  # GCP metadata

  resources:
    max_processes: 100       # Process limit
    max_memory_mb: 2048      # Memory limit
    max_cpu_seconds: 300     # CPU time limit
    max_file_size_mb: 100    # Max file write size

  audit:
    enabled: true
    log_file: "~/.amplifier/sandbox-audit.log"
    log_allowed: false     # Log allowed operations too?
    log_denied: true       # Log denied operations
`
	l, err := Parse(testFile, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if *l.Mode != "standard" || *l.Profile != "development" || *l.OnViolation != "block" ||
		len(l.Filesystem.Deny) != 6 || l.Filesystem.Read[3] != "${HOME}/.config/amplifier" ||
		len(l.Network.Allow) != 3 || l.Network.Deny[1] != "metadata.google.*" ||
		*l.Resources.MaxFileSizeMB != 100 || *l.Audit.LogFile != "~/.amplifier/sandbox-audit.log" {
		t.Errorf("original-format config parsed wrongly: %+v", l)
	}
	if got := l.Line(EntryKey(KeyFilesystemDeny, 3)); got != 25 {
		t.Errorf("line of deny[3] = %d, want 25", got)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "sandbox:\n", "sandbox: {}\n", "~\n", "sandbox:\n  filesystem:\n    read:\n  network: {}\n"} {
		l, err := Parse(testFile, []byte(src))
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		empty := &Layer{Source: testFile}
		got := *l
		got.Lines = nil
		if !reflect.DeepEqual(&got, empty) {
			t.Errorf("Parse(%q) = %+v, want an empty layer", src, l)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		line int
		key  string
		msg  string
	}{
		{"sandbox:\n  filesystem:\n    read: []\n    wirte: [/x]\n", 4, "sandbox.filesystem.wirte", `unknown key "sandbox.filesystem.wirte"; did you mean "write"?`},
		{"sandbox:\n  filesystem:\n    deny-write: [/x]\n", 3, "sandbox.filesystem.deny-write", `unknown key "sandbox.filesystem.deny-write"; did you mean "deny_write"?`},
		{"sandbox:\n  bogus: 1\n", 2, "sandbox.bogus", `unknown key "sandbox.bogus"; allowed keys under sandbox are: enabled, mode, profile, filesystem, network, resources, on_violation, audit, timeout, backend, bwrap_path, unix_sockets, env, credentials`},
		{"sandbox:\n  credentials:\n    - {name: x, token: abc123}\n", 3, "sandbox.credentials.token", `unknown key "sandbox.credentials.token"; allowed keys under sandbox.credentials are: name, hosts, env, command, file, npmrc, netrc, headers, methods, paths, git_username`},
		{"sandbox:\n  credentials: [github]\n", 2, "sandbox.credentials", `entry 1 of sandbox.credentials must be a mapping with keys name, hosts, env, command, file, npmrc, netrc, headers, methods, paths, git_username, not a string`},
		{"sandbx:\n  mode: strict\n", 1, "sandbx", `unknown top-level key "sandbx"; did you mean "sandbox"?`},
		{"mode: strict\n", 1, "mode", `unknown top-level key "mode"; cordon settings go under a top-level "sandbox:" key`},
		{"version: 2\n", 1, "version", `unknown top-level key "version"; the top-level keys are "sandbox" and "workspaces"`},
		{"- a\n- b\n", 1, "", `the file must be a mapping with a top-level "sandbox:" key, not a list`},
		{"sandbox: [a]\n", 1, "sandbox", `sandbox must be a mapping with keys enabled, mode, profile, filesystem, network, resources, on_violation, audit, timeout, backend, bwrap_path, unix_sockets, env, credentials, not a list`},
		{"sandbox:\n  network: true\n", 2, "sandbox.network", `sandbox.network must be a mapping with keys enabled, mode, allow, deny, forward_ports, not a true/false value`},
		{"sandbox:\n\n\n\n\n\n  resources:\n    max_memory_mb: lots\n", 8, "sandbox.resources.max_memory_mb", `sandbox.resources.max_memory_mb must be a whole number of megabytes, not a string`},
		{"sandbox:\n  resources: {max_processes: 1.5}\n", 2, "sandbox.resources.max_processes", `sandbox.resources.max_processes must be a whole number of processes, not a fractional number`},
		{"sandbox:\n  resources:\n    max_cpu_seconds: \"60\"\n", 3, "sandbox.resources.max_cpu_seconds", `sandbox.resources.max_cpu_seconds must be a whole number of seconds, not a string`},
		{"sandbox:\n  resources:\n    max_file_size_mb:\n", 3, "sandbox.resources.max_file_size_mb", `sandbox.resources.max_file_size_mb has no value; set it to a whole number of megabytes or remove the key`},
		{"sandbox:\n  enabled: yes\n", 2, "sandbox.enabled", `sandbox.enabled must be true or false, not a string`},
		{"sandbox:\n  audit:\n    log_denied: [true]\n", 3, "sandbox.audit.log_denied", `sandbox.audit.log_denied must be true or false, not a list`},
		{"sandbox:\n  mode: strcit\n", 2, "sandbox.mode", `sandbox.mode must be one of off, permissive, standard, strict (did you mean "strict"?)`},
		{"sandbox:\n  profile: dev\n", 2, "sandbox.profile", `sandbox.profile must be one of minimal, development, ci, untrusted`},
		{"sandbox:\n  network:\n    mode: filtered\n", 3, "sandbox.network.mode", `sandbox.network.mode must be one of deny, open, loopback`},
		{"sandbox:\n  on_violation: kill\n", 2, "sandbox.on_violation", `sandbox.on_violation must be one of block, warn, log, ask`},
		{"workspaces: [a]\n", 1, "workspaces", `workspaces must be a mapping from a workspace's absolute path to its filesystem and network entries, not a list`},
		{"workspaces:\n  proj: {}\n", 2, "workspaces", `each key under workspaces must be a workspace's absolute path`},
		{"workspaces:\n  /p: {}\n  /p: {}\n", 3, "workspaces", `the same workspace twice under workspaces (first on line 2); merge them`},
		{"workspaces:\n  /p:\n    network: {deny: [x]}\n", 3, "sandbox.network.deny", `unknown key "sandbox.network.deny"; allowed keys under sandbox.network are: allow`},
		{"workspaces:\n  /p:\n    mode: off\n", 3, "sandbox.mode", `unknown key "sandbox.mode"; allowed keys under sandbox are: filesystem, network`},
		{"sandbox:\n  backend: docker\n", 2, "sandbox.backend", `sandbox.backend must be one of auto, bwrap, landlock, seatbelt, job, none`},
		{"sandbox:\n  timeout: 90\n", 2, "sandbox.timeout", `sandbox.timeout must be a duration with a unit, like "90s", "5m" or "1h30m", not a whole number`},
		{"sandbox:\n  timeout: soon\n", 2, "sandbox.timeout", `sandbox.timeout is not a duration: write one with a unit, like "90s", "5m" or "1h30m"`},
		{"sandbox:\n\tmode: strict\n", 2, "", `invalid YAML: the line is indented with a tab; YAML indents with spaces`},
		{"sandbox:\n  bwrap_path: {a: b}\n", 2, "sandbox.bwrap_path", `sandbox.bwrap_path must be a string, not a mapping`},
		{"sandbox:\n  filesystem:\n    read: /usr\n", 3, "sandbox.filesystem.read", `sandbox.filesystem.read must be a list, like ["a", "b"], not a string`},
		{"sandbox:\n  env:\n    - A\n    - {B: c}\n", 4, "sandbox.env", `entry 2 of sandbox.env must be a non-empty string, not a mapping`},
		{"sandbox:\n  filesystem:\n    read:\n      - /a\n      - ~\n", 5, "sandbox.filesystem.read", `entry 2 of sandbox.filesystem.read is empty: YAML reads a bare ~ as nothing; write "~" in quotes`},
		{"sandbox:\n  unix_sockets: [\"\"]\n", 2, "sandbox.unix_sockets", `entry 1 of sandbox.unix_sockets must be a non-empty string, not an empty string`},
		{"sandbox:\n  network:\n    forward_ports:\n      - 80\n      - 70000\n", 5, "sandbox.network.forward_ports", `entry 2 of sandbox.network.forward_ports must be a TCP port number from 1 to 65535, not a number out of that range`},
		{"sandbox:\n  network:\n    forward_ports: [http]\n", 3, "sandbox.network.forward_ports", `entry 1 of sandbox.network.forward_ports must be a TCP port number from 1 to 65535, not a string`},
		{"sandbox:\n  mode: strict\n  mode: off\n", 3, "sandbox.mode", `duplicate key "sandbox.mode" (first set on line 2); remove one of them`},
		{"sandbox:\n  filesystem:\n    read: [/a]\n  filesystem:\n    write: [/b]\n", 4, "sandbox.filesystem", `duplicate key "sandbox.filesystem" (first set on line 2); remove one of them`},
		{"sandbox: {}\nsandbox: {}\n", 2, "sandbox", `duplicate key "sandbox" (first set on line 1); remove one of them`},
		{"sandbox:\n  mode: strict\n   profile: ci\n", 3, "", `invalid YAML: mapping values are not allowed in this context`},
		{"sandbox:\n  read: [a, b\n", 1, "", `invalid YAML: did not find expected ',' or ']'`},
		{"sandbox:\n  \"-----BEGIN KEY-----\": 1\n", 2, "sandbox", `an unknown key under sandbox; allowed keys there are: enabled, mode, profile, filesystem, network, resources, on_violation, audit, timeout, backend, bwrap_path, unix_sockets, env, credentials`},
		{"sandbox: {}\n---\nsandbox: {}\n", 2, "", `a second YAML document (after "---") is not allowed; put all settings under one "sandbox:" key`},
	} {
		_, err := Parse(testFile, []byte(tc.src))
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("Parse(%q) = %v, want a *config.Error", tc.src, err)
			continue
		}
		if ce.File != testFile || ce.Line != tc.line || ce.Key != tc.key || ce.Msg != tc.msg {
			t.Errorf("Parse(%q):\n got %s:%d [%s] %s\nwant %s:%d [%s] %s", tc.src, ce.File, ce.Line, ce.Key, ce.Msg, testFile, tc.line, tc.key, tc.msg)
		}
		wantLine := testFile + ":" + strconv.Itoa(tc.line) + ": " + tc.msg
		if err.Error() != wantLine {
			t.Errorf("Error() = %q, want %q", err.Error(), wantLine)
		}
	}
}

// TestParseWorkspaces: the top-level workspaces mapping gives a Layer per
// workspace, with the lines of its entries.
func TestParseWorkspaces(t *testing.T) {
	src := "sandbox: {mode: strict}\nworkspaces:\n  /home/me/proj:\n    network:\n      allow: [\"a.test:443\"]\n    filesystem: {read: [~/notes.txt], write: [/srv/out]}\n  /other: {}\n"
	l, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Workspaces) != 2 || l.Workspaces[0].Path != "/home/me/proj" || l.Workspaces[0].Line != 3 || l.Workspaces[1].Path != "/other" {
		t.Fatalf("Workspaces = %+v", l.Workspaces)
	}
	w := l.Workspaces[0].Layer
	if !slices.Equal(w.Network.Allow, []string{"a.test:443"}) || !slices.Equal(w.Filesystem.Read, []string{"~/notes.txt"}) || !slices.Equal(w.Filesystem.Write, []string{"/srv/out"}) {
		t.Errorf("entry = %+v", w)
	}
	if w.Line(EntryKey(KeyNetworkAllow, 0)) != 5 || w.Source != "c.yaml" || w.Mode != nil || l.Network.Allow != nil {
		t.Errorf("entry lines %v, source %q; the sandbox layer's allow %v", w.Lines, w.Source, l.Network.Allow)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	_, err := ParseFile(filepath.Join(dir, "missing.yaml"), ReadOptions{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ParseFile(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestAliasesResolve(t *testing.T) {
	src := "sandbox:\n  filesystem:\n    read: &r [/a, /b]\n    write: *r\n"
	l, err := Parse(testFile, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Filesystem.Write, []string{"/a", "/b"}) {
		t.Errorf("write = %q, want the aliased list", l.Filesystem.Write)
	}
}

func TestLayerErrorf(t *testing.T) {
	l, err := Parse(testFile, []byte("sandbox:\n  filesystem:\n    read:\n      - /a\n      - rel\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := l.Errorf(EntryKey(KeyFilesystemRead, 1), "%s is bad", l.Name(EntryKey(KeyFilesystemRead, 1)))
	if got, want := e.Error(), testFile+":5: sandbox.filesystem.read is bad"; got != want {
		t.Errorf("entry error = %q, want %q", got, want)
	}
	if e.Key != KeyFilesystemRead {
		t.Errorf("Key = %q, want %q", e.Key, KeyFilesystemRead)
	}
	// An entry without its own line falls back to the key's line.
	if got := l.Line(EntryKey(KeyFilesystemRead, 9)); got != 3 {
		t.Errorf("fallback line = %d, want 3", got)
	}

	f := NewFlags()
	f.Resources.MaxMemoryMB = Ptr(1)
	e = f.Errorf(KeyMaxMemoryMB, "%s is too small", f.Name(KeyMaxMemoryMB))
	if got, want := e.Error(), "--max-memory is too small"; got != want {
		t.Errorf("flags error = %q, want %q", got, want)
	}
	f.SetWhere(KeyMode, "--sandbox")
	if got := f.Name(KeyMode); got != "--sandbox" {
		t.Errorf("Name(mode) after SetWhere = %q, want --sandbox", got)
	}
	if got := f.Name(KeyAuditEnabled); got != KeyAuditEnabled {
		t.Errorf("Name of a key without a flag = %q, want the key", got)
	}
	if got := (&Error{File: "/f", Msg: "m"}).Error(); got != "/f: m" {
		t.Errorf("lineless error = %q", got)
	}
}

func TestFlagFor(t *testing.T) {
	for key, want := range map[string]string{
		KeyFilesystemWrite:                  "--allow-write",
		EntryKey(KeyFilesystemDenyWrite, 3): "--deny-write",
		KeyNetworkAllow:                     "--allow-net",
		KeyMaxProcesses:                     "--max-procs",
		KeyBwrapPath:                        "",
		KeyAuditLogFile:                     "--audit-log",
	} {
		if got := FlagFor(key); got != want {
			t.Errorf("FlagFor(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"read", "write", "deny", "deny_write"}
	for in, want := range map[string]string{
		"wirte":     "write",
		"reed":      "read",
		"DenyWrite": "deny_write",
		"den":       "deny",
		"network":   "",
		"x":         "",
	} {
		if got := suggest(in, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}
