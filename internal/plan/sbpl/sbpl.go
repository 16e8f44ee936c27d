package sbpl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Op is an SBPL operation name, one of Operations.
type Op string

// The operations this package writes and Check accepts. A "*" suffix
// names the operation and all of its sub-operations (file-write* is
// file-write-data, file-write-create, file-write-unlink, ...).
const (
	OpDefault           Op = "default"             // every operation no other rule names
	OpFileRead          Op = "file-read*"          // any read: data, metadata, xattrs, readdir
	OpFileReadData      Op = "file-read-data"      // reading a file's contents or listing a directory
	OpFileReadMetadata  Op = "file-read-metadata"  // stat, lstat, readlink, getattrlist
	OpFileReadXattr     Op = "file-read-xattr"     // reading extended attributes
	OpFileWrite         Op = "file-write*"         // any change: data, create, unlink, mode, owner, times, xattrs
	OpFileWriteData     Op = "file-write-data"     // writing a file's contents
	OpFileWriteCreate   Op = "file-write-create"   // creating a file, directory, link or socket
	OpFileWriteUnlink   Op = "file-write-unlink"   // removing or renaming away
	OpFileWriteMode     Op = "file-write-mode"     // chmod
	OpFileWriteOwner    Op = "file-write-owner"    // chown
	OpFileWriteTimes    Op = "file-write-times"    // utimes
	OpFileWriteXattr    Op = "file-write-xattr"    // setting extended attributes
	OpFileIoctl         Op = "file-ioctl"          // ioctl(2) on a file (a terminal)
	OpFileMapExecutable Op = "file-map-executable" // mmap with PROT_EXEC (dyld loading a library)
	OpFileLink          Op = "file-link"           // hard links
	OpProcessExec       Op = "process-exec"        // execve
	OpProcessExecAll    Op = "process-exec*"       // execve and its interpreter variants
	OpProcessFork       Op = "process-fork"        // fork, vfork, posix_spawn
	OpProcessInfo       Op = "process-info*"       // proc_info, sysctl kern.proc of a process
	OpProcessInfoPid    Op = "process-info-pidinfo"
	OpSignal            Op = "signal"           // kill(2)
	OpNetwork           Op = "network*"         // every network operation
	OpNetworkOutbound   Op = "network-outbound" // connect, sendto
	OpNetworkInbound    Op = "network-inbound"  // accept, recvfrom
	OpNetworkBind       Op = "network-bind"     // bind
	OpMachLookup        Op = "mach-lookup"      // looking up a Mach service by name
	OpMachRegister      Op = "mach-register"    // registering a Mach service
	OpSysctlRead        Op = "sysctl-read"      // reading a sysctl
	OpSysctlWrite       Op = "sysctl-write"     // writing a sysctl
	OpIPCPosixShm       Op = "ipc-posix-shm*"   // POSIX shared memory
	OpIPCPosixSem       Op = "ipc-posix-sem"    // POSIX semaphores
	OpIPCSysvShm        Op = "ipc-sysv-shm"     // System V shared memory
	OpIPCSysvSem        Op = "ipc-sysv-sem"     // System V semaphores
	OpIOKitOpen         Op = "iokit-open"       // opening an IOKit user client
	OpPseudoTTY         Op = "pseudo-tty"       // allocating a pseudo-terminal
	OpSystemSocket      Op = "system-socket"    // socket(2) of a system domain (routing, kernel control)
	OpUserPreference    Op = "user-preference-read"
)

// Operations is the table of operations Check accepts: the constants
// above.
var Operations = map[Op]bool{
	OpDefault: true, OpFileRead: true, OpFileReadData: true, OpFileReadMetadata: true,
	OpFileReadXattr: true, OpFileWrite: true, OpFileWriteData: true, OpFileWriteCreate: true,
	OpFileWriteUnlink: true, OpFileWriteMode: true, OpFileWriteOwner: true, OpFileWriteTimes: true,
	OpFileWriteXattr: true, OpFileIoctl: true, OpFileMapExecutable: true, OpFileLink: true,
	OpProcessExec: true, OpProcessExecAll: true, OpProcessFork: true, OpProcessInfo: true,
	OpProcessInfoPid: true, OpSignal: true, OpNetwork: true, OpNetworkOutbound: true,
	OpNetworkInbound: true, OpNetworkBind: true, OpMachLookup: true, OpMachRegister: true,
	OpSysctlRead: true, OpSysctlWrite: true, OpIPCPosixShm: true, OpIPCPosixSem: true,
	OpIPCSysvShm: true, OpIPCSysvSem: true, OpIOKitOpen: true, OpPseudoTTY: true,
	OpSystemSocket: true, OpUserPreference: true,
}

// Filters is the table of filter names Check accepts, each with what it
// takes:
//
//	subpath, literal, prefix, path-literal   a path: (param "NAME") or a string
//	regex                                    a regex literal #"..."
//	global-name                              a Mach service name (string)
//	remote, local                            ip "HOST:PORT", or unix-socket (path-literal ...)
//	target                                   self, same-sandbox, others
//	require-all, require-any, require-not    filters
//	path                                     a path (an alias of literal)
//	param                                    a parameter's name (string)
var Filters = map[string]bool{
	"subpath": true, "literal": true, "prefix": true, "path-literal": true, "path": true,
	"regex": true, "global-name": true, "remote": true, "local": true, "target": true,
	"require-all": true, "require-any": true, "require-not": true, "param": true,
}

// Keywords are the bare symbols a filter may take as an argument.
var Keywords = map[string]bool{
	"ip": true, "tcp": true, "udp": true, "unix-socket": true,
	"self": true, "same-sandbox": true, "others": true,
}

// Modifiers are the (with ...) forms a rule may carry after its
// operations.
var Modifiers = map[string]bool{"message": true, "report": true, "no-report": true, "no-log": true}

// Action is allow or deny.
type Action string

// Actions.
const (
	Allow Action = "allow"
	Deny  Action = "deny"
)

// Param is a parameter of a profile: Name in the profile, (param "Name"),
// and Value on sandbox-exec's command line, -D Name=Value.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Filter is one filter of a rule, built by the functions below; the zero
// Filter is invalid.
type Filter struct {
	expr string
	err  error
}

// Quote returns s as an SBPL string literal: '"' and '\' escaped, any
// control character (below 0x20, or 0x7f) refused. It is for the few
// strings that are not paths (paths are parameters).
func Quote(s string) (string, error) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return "", fmt.Errorf("sbpl: string %q holds a control character", s)
		case c == '"' || c == '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// validName reports whether s is usable as a parameter name: an upper-case
// letter, then upper-case letters, digits or '_'.
func validName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// paramFilter is (KIND (param "NAME")).
func paramFilter(kind, name string) Filter {
	if !validName(name) {
		return Filter{err: fmt.Errorf("sbpl: %s: bad parameter name %q", kind, name)}
	}
	return Filter{expr: "(" + kind + ` (param "` + name + `"))`}
}

// Subpath matches the path the parameter name holds and everything below.
func Subpath(name string) Filter { return paramFilter("subpath", name) }

// Literal matches exactly the path the parameter name holds.
func Literal(name string) Filter { return paramFilter("literal", name) }

// Regex matches the paths the regex re matches (searched, not anchored,
// in the absolute path). re must not hold '"' or a control character,
// which a regex literal #"..." cannot carry; GlobRegex never emits them.
func Regex(re string) Filter {
	if re == "" || strings.ContainsAny(re, "\"") || hasControl(re) {
		return Filter{err: fmt.Errorf("sbpl: regex %q is empty or holds a '\"' or a control character", re)}
	}
	return Filter{expr: `(regex #"` + re + `")`}
}

// GlobalName matches the Mach service name.
func GlobalName(name string) Filter { return stringFilter("global-name", name) }

// RemoteIP matches a remote address "HOST:PORT" (HOST is localhost or *,
// PORT a number or *).
func RemoteIP(addr string) Filter { return ipFilter("remote", addr) }

// LocalIP matches a local address "HOST:PORT", as RemoteIP.
func LocalIP(addr string) Filter { return ipFilter("local", addr) }

// RemoteUnixSocket matches a connection to the unix socket at the path the
// parameter name holds.
func RemoteUnixSocket(name string) Filter {
	f := paramFilter("path-literal", name)
	if f.err != nil {
		return f
	}
	return Filter{expr: "(remote unix-socket " + f.expr + ")"}
}

// Target matches the process a process-info or signal operation acts on:
// "self", "same-sandbox" or "others".
func Target(who string) Filter {
	switch who {
	case "self", "same-sandbox", "others":
		return Filter{expr: "(target " + who + ")"}
	}
	return Filter{err: fmt.Errorf("sbpl: unknown target %q", who)}
}

// RequireAll matches when every one of fs matches.
func RequireAll(fs ...Filter) Filter { return combine("require-all", fs) }

// RequireAny matches when one of fs matches.
func RequireAny(fs ...Filter) Filter { return combine("require-any", fs) }

// RequireNot matches when f does not.
func RequireNot(f Filter) Filter { return combine("require-not", []Filter{f}) }

func combine(kind string, fs []Filter) Filter {
	if len(fs) == 0 {
		return Filter{err: fmt.Errorf("sbpl: %s of no filter", kind)}
	}
	parts := make([]string, 0, len(fs))
	for _, f := range fs {
		if err := f.check(); err != nil {
			return Filter{err: err}
		}
		parts = append(parts, f.expr)
	}
	return Filter{expr: "(" + kind + " " + strings.Join(parts, " ") + ")"}
}

func stringFilter(kind, s string) Filter {
	q, err := Quote(s)
	if err != nil {
		return Filter{err: fmt.Errorf("sbpl: %s: %w", kind, err)}
	}
	return Filter{expr: "(" + kind + " " + q + ")"}
}

func ipFilter(kind, addr string) Filter {
	host, port, ok := strings.Cut(addr, ":")
	if !ok || (host != "localhost" && host != "*") {
		return Filter{err: fmt.Errorf("sbpl: %s ip %q: the host must be localhost or *", kind, addr)}
	}
	if n, err := strconv.Atoi(port); port != "*" && (err != nil || n < 1 || n > 65535) {
		return Filter{err: fmt.Errorf("sbpl: %s ip %q: the port must be 1-65535 or *", kind, addr)}
	}
	q, _ := Quote(addr)
	return Filter{expr: "(" + kind + " ip " + q + ")"}
}

func (f Filter) check() error {
	if f.err != nil {
		return f.err
	}
	if f.expr == "" {
		return errors.New("sbpl: zero Filter")
	}
	return nil
}

func hasControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// Profile writes an SBPL profile, one rule a line. Its first error is
// kept and returned by Text; later calls do nothing.
type Profile struct {
	b       strings.Builder
	params  []Param
	names   map[string]string // prefix+"\x00"+value -> name
	count   map[string]int
	message string
	err     error
}

// New starts a profile with (version 1). message, when not "", is carried
// by every deny rule as (with message "..."), so that the denials of this
// profile can be told apart in the system log.
func New(message string) *Profile {
	p := &Profile{names: map[string]string{}, count: map[string]int{}}
	if message != "" {
		q, err := Quote(message)
		if err != nil {
			p.err = fmt.Errorf("sbpl: the deny message: %w", err)
		}
		p.message = q
	}
	p.b.WriteString("(version 1)\n")
	return p
}

// Continue starts a writer whose rules come after those of profile, a
// complete profile that Check accepts and whose parameters are params
// (its Params): Text returns profile followed by the new rules. Since SBPL
// is last-match-wins, a rule written to it overrides every rule of
// profile for what it matches; the caller says why that is right. message
// is carried by new deny rules, as New's. New parameters are named after
// params (the same prefix and value give the same name), so that the
// caller passes params followed by the new ones (Params) to sandbox-exec.
func Continue(profile, message string, params []Param) (*Profile, error) {
	if err := Check(profile); err != nil {
		return nil, fmt.Errorf("sbpl: continuing a profile that is not well-formed: %w", err)
	}
	p := New(message)
	if p.err != nil {
		return nil, p.err
	}
	p.b.Reset()
	p.b.WriteString(profile)
	if !strings.HasSuffix(profile, "\n") {
		p.b.WriteString("\n")
	}
	for _, prm := range params {
		prefix := strings.TrimRight(prm.Name, "0123456789")
		n, err := strconv.Atoi(prm.Name[len(prefix):])
		if err != nil || !validName(prefix) || prm.Value == "" || strings.ContainsRune(prm.Value, 0) {
			return nil, fmt.Errorf("sbpl: continuing a profile: bad parameter %q", prm.Name)
		}
		p.names[prefix+"\x00"+prm.Value] = prm.Name
		p.count[prefix] = max(p.count[prefix], n+1)
		p.params = append(p.params, prm)
	}
	return p, nil
}

// Param returns the name of a parameter holding value: prefix followed by
// a number, in order of first use; the same prefix and value give the same
// name. The value may hold any character but NUL (it is a command-line
// argument).
func (p *Profile) Param(prefix, value string) string {
	key := prefix + "\x00" + value
	if n, ok := p.names[key]; ok {
		return n
	}
	name := prefix + strconv.Itoa(p.count[prefix])
	if !validName(prefix) || strings.ContainsRune(value, 0) || value == "" {
		p.fail(fmt.Errorf("sbpl: parameter %s: bad prefix, or an empty value or one holding NUL", name))
	}
	p.count[prefix]++
	p.names[key] = name
	p.params = append(p.params, Param{Name: name, Value: value})
	return name
}

// Params returns the profile's parameters in order of first use.
func (p *Profile) Params() []Param { return append([]Param(nil), p.params...) }

// Comment writes a comment line, ";; text"; text must hold no control
// character.
func (p *Profile) Comment(text string) {
	if hasControl(text) {
		p.fail(fmt.Errorf("sbpl: comment %q holds a control character", text))
		return
	}
	p.b.WriteString(";; " + text + "\n")
}

// Blank writes an empty line.
func (p *Profile) Blank() { p.b.WriteString("\n") }

// Allow writes (allow OPS FILTERS...) for the operations ops.
func (p *Profile) Allow(ops []Op, fs ...Filter) { p.rule(Allow, ops, fs) }

// Deny writes (deny OPS (with message ...) FILTERS...).
func (p *Profile) Deny(ops []Op, fs ...Filter) { p.rule(Deny, ops, fs) }

func (p *Profile) rule(a Action, ops []Op, fs []Filter) {
	if len(ops) == 0 {
		p.fail(fmt.Errorf("sbpl: %s rule without an operation", a))
		return
	}
	parts := []string{string(a)}
	for _, op := range ops {
		if !Operations[op] {
			p.fail(fmt.Errorf("sbpl: unknown operation %q", op))
			return
		}
		parts = append(parts, string(op))
	}
	if a == Deny && p.message != "" {
		parts = append(parts, "(with message "+p.message+")")
	}
	for _, f := range fs {
		if err := f.check(); err != nil {
			p.fail(fmt.Errorf("sbpl: %s %s: %w", a, ops[0], err))
			return
		}
		parts = append(parts, f.expr)
	}
	p.b.WriteString("(" + strings.Join(parts, " ") + ")\n")
}

func (p *Profile) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// Text returns the profile's text, or the first error met writing it.
func (p *Profile) Text() (string, error) {
	if p.err != nil {
		return "", p.err
	}
	return p.b.String(), nil
}
