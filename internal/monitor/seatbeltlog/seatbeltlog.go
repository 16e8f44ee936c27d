// Package seatbeltlog reads the denials of one Seatbelt run out of macOS's
// unified log: it owns the argv of the /usr/bin/log stream that selects
// them (Argv), and the parsing of each line that stream prints into a
// monitor.Event (Parser), so that the violation monitor's classifier
// (package launch, with policy.Decider) serves macOS as it serves Linux.
//
// How a run's denials are found. Every deny rule of cordon's profile
// carries (with message "cordon-RUNID") (plan.SeatbeltPlan.Tag). When
// Seatbelt denies an operation, the kernel logs one message per denial,
//
//	Sandbox: cat(1234) deny(1) file-read-data /Users/x/.ssh/id_rsa
//	cordon-0123456789abcdef
//
// the rule's message on a line of its own after the denial, and, when it
// rate-limits a denial it has just reported, "N duplicate reports for
// Sandbox: ..." later. The stream's predicate keeps the messages that end
// with this run's tag (eventMessage ENDSWITH "cordon-RUNID"): ENDSWITH and
// not CONTAINS, so that another program's denial of a path that merely
// holds the tag is not taken for this run's. The tag is random hex that
// cordon made, checked here (CheckTag) before it goes between the
// predicate's quotes; nothing the command chooses ever reaches the
// predicate or a shell.
//
// What it must not do: decide. Which rule denied an access, whether it is
// a secret, what to suggest, what to record: all that is the classifier's.
// It must not start, stop or wait for processes either (the launcher
// does), and it must not trust the text after the operation to be
// anything but what the kernel printed: the program's name and the path
// are the command's own choice, so a hostile name can at worst mislabel
// its own denial, never add one to another run.
//
// Operations. file-read-* (data, metadata, xattr), file-map-executable and
// file-test-existence are monitor.OpRead; file-write-* (create, data,
// unlink, mode, flags, times, xattr, ...) OpWrite; process-exec* OpExec;
// network-outbound OpConnect and network-bind OpBind, with the internet
// address (Event.Addr) or the unix socket (Event.Path) they name, or, when
// the kernel printed no host ("remote:*:443"), the text in Event.Name. Every
// other operation (mach-lookup, sysctl-read, signal, iokit-open,
// network-inbound, a file operation without an absolute path, ...) is
// monitor.OpOther with Event.Call the operation and Event.Name its target:
// the policy has no name for them, so the classifier counts them and shows
// a few, but records no audit record of them.
//
// This package was written from the message format as others document and
// test it, and is tested on Linux with recorded-format fixtures; it has
// not been run against a Mac's log.
package seatbeltlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/internal/monitor"
)

// LogPath is macOS's log command, run by its absolute path: a log earlier
// in PATH (a shell function, zsh's builtin) is never taken.
const LogPath = "/usr/bin/log"

// TagPrefix starts every tag.
const TagPrefix = "cordon-"

// tagRE is a tag as plan writes it: the prefix and 16 to 64 lower-case hex
// digits (a run's random id). This package's expressions are compiled on
// first use: every cordon process links it, few use it, and compiling them
// at start cost each about 0.1 ms.
var tagRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^cordon-[0-9a-f]{16,64}$`) })

// ErrTag is the refusal of a tag that is not one cordon makes.
var ErrTag = errors.New("seatbeltlog: the run's tag must be \"cordon-\" and 16 to 64 lower-case hex digits")

// CheckTag reports whether tag is one cordon makes ("cordon-" and random
// lower-case hex), the only text that goes into the log predicate.
func CheckTag(tag string) error {
	if !tagRE().MatchString(tag) {
		return fmt.Errorf("%w, not %q", ErrTag, tag)
	}
	return nil
}

// Predicate is the log predicate that selects the messages of the run
// tagged tag: those that end with it.
func Predicate(tag string) (string, error) {
	if err := CheckTag(tag); err != nil {
		return "", err
	}
	return `eventMessage ENDSWITH "` + tag + `"`, nil
}

// Argv is the command that streams the denials of the run tagged tag, one
// JSON object a line: /usr/bin/log stream --style ndjson --predicate ...
func Argv(tag string) ([]string, error) {
	pred, err := Predicate(tag)
	if err != nil {
		return nil, err
	}
	return []string{LogPath, "stream", "--style", "ndjson", "--predicate", pred}, nil
}

// IsHeader reports whether line is the line log stream starts with,
// "Filtering the log data using ...".
func IsHeader(line []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(line), []byte("Filtering the log data"))
}

// maxCount caps the count of one duplicate report.
const maxCount = 100000

// Denial is one message of the log: a denial, and how many times it
// happened.
type Denial struct {
	// Event is the denied operation.
	Event monitor.Event
	// Count is 1, or N for "N duplicate reports for ..." (at most
	// 100000).
	Count int
}

// Parser turns the lines of one run's log stream into Denials.
type Parser struct {
	tag string
}

// NewParser is the parser of the run tagged tag (see CheckTag).
func NewParser(tag string) (*Parser, error) {
	if err := CheckTag(tag); err != nil {
		return nil, err
	}
	return &Parser{tag: tag}, nil
}

// record is the part of a log stream --style ndjson object read here.
type record struct {
	EventMessage *string `json:"eventMessage"`
}

var (
	// dupRE is the prefix of a duplicate report.
	dupRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]{1,9}) duplicate reports? for `) })
	// denyRE is a denial: the program's name (which may hold spaces and
	// parentheses: the shortest that fits is taken), its pid, the
	// operation and what follows it, to the end (a path may hold spaces
	// and newlines).
	denyRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)^Sandbox: (.*?)\(([0-9]{1,10})\) deny\([0-9]+\) ([a-z][a-z0-9*-]*)(?: (.*))?$`)
	})
)

// Parse reads one line of the stream. ok is false for a line that is not
// a denial of this run: the stream's header ("Filtering the log data
// using ..."), a line that is not a JSON object, a message that does not
// end with this run's tag on a line (or after a space) of its own, or
// one that is not a Sandbox denial.
func (p *Parser) Parse(line []byte) (d Denial, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Denial{}, false
	}
	var r record
	if err := json.Unmarshal(line, &r); err != nil || r.EventMessage == nil {
		return Denial{}, false
	}
	msg, ok := p.untag(*r.EventMessage)
	if !ok {
		return Denial{}, false
	}
	d.Count = 1
	if m := dupRE().FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		d.Count = max(1, min(n, maxCount))
		msg = msg[len(m[0]):]
	}
	m := denyRE().FindStringSubmatch(msg)
	if m == nil {
		return Denial{}, false
	}
	pid, err := strconv.Atoi(m[2])
	if err != nil {
		return Denial{}, false
	}
	d.Event = event(m[3], m[4])
	d.Event.Pid, d.Event.Comm, d.Event.Call = pid, m[1], m[3]
	return d, true
}

// untag returns msg without this run's tag at its end and the newline or
// space before it.
func (p *Parser) untag(msg string) (string, bool) {
	msg = strings.TrimRight(msg, "\n")
	body, ok := strings.CutSuffix(msg, p.tag)
	if !ok || body == "" {
		return "", false
	}
	switch body[len(body)-1] {
	case '\n', ' ':
		return body[:len(body)-1], true
	}
	return "", false
}

// event is the Event of operation op on target, as the kernel printed
// them.
func event(op, target string) monitor.Event {
	switch {
	case strings.HasPrefix(op, "file-read"), op == "file-map-executable", op == "file-test-existence":
		return fileEvent(monitor.OpRead, target)
	case strings.HasPrefix(op, "file-write"):
		return fileEvent(monitor.OpWrite, target)
	case strings.HasPrefix(op, "process-exec"):
		return fileEvent(monitor.OpExec, target)
	case op == "network-outbound":
		return netEvent(monitor.OpConnect, target)
	case op == "network-bind":
		return netEvent(monitor.OpBind, target)
	}
	return monitor.Event{Op: monitor.OpOther, Name: target}
}

// fileEvent is the Event of a file operation: target is an absolute path,
// or the operation is an OpOther.
func fileEvent(op monitor.Op, target string) monitor.Event {
	if !strings.HasPrefix(target, "/") {
		return monitor.Event{Op: monitor.OpOther, Name: target}
	}
	return monitor.Event{Op: op, Path: path.Clean(target)}
}

// netEvent is the Event of a socket operation on target: a unix socket's
// path, or host:port after "remote:" or "local:"; a target with no host
// the policy can decide ("*:443") stays in Name.
func netEvent(op monitor.Op, target string) monitor.Event {
	t := target
	for _, p := range []string{"remote:", "local:"} {
		t = strings.TrimPrefix(t, p)
	}
	if strings.HasPrefix(t, "/") {
		return monitor.Event{Op: op, Path: path.Clean(t)}
	}
	if ap, err := netip.ParseAddrPort(t); err == nil {
		return monitor.Event{Op: op, Addr: ap}
	}
	return monitor.Event{Op: op, Name: target}
}

// MaxLine bounds a line of the stream that Scan passes on: a longer one
// (no denial message is near it) is skipped whole.
const MaxLine = 256 << 10

// Scan calls fn with each line that r yields (without its newline) until
// r ends, and returns r's error, or nil at its end. A line longer than
// MaxLine is skipped whole, and the next one read as usual. The slice
// passed to fn is valid only during the call.
func Scan(r io.Reader, fn func(line []byte)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case skipping:
		case len(buf)+len(chunk) > MaxLine+1:
			skipping, buf = true, buf[:0]
		default:
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !skipping && len(buf) > 0 {
			fn(bytes.TrimSuffix(buf, []byte("\n")))
		}
		buf, skipping = buf[:0], false
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the log stream: %w", err)
		}
	}
}

// firmlinks are macOS's top-level symbolic links into /private, whose
// real paths the kernel logs.
var firmlinks = []string{"/etc", "/tmp", "/var"}

// Unprivate returns the path a policy names for p, which the kernel
// logged by its real path: /private/tmp/x is /tmp/x; "" when p is not
// below one of /private/etc, /private/tmp and /private/var.
func Unprivate(p string) string {
	for _, f := range firmlinks {
		if r, ok := strings.CutPrefix(p, "/private"+f); ok && (r == "" || r[0] == '/') {
			return f + r
		}
	}
	return ""
}
