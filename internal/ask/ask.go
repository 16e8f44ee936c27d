// Package ask owns cordon's questions to a person at the terminal
// (cordon run --ask, on_violation: ask): the Question about one access the
// policy refuses, its Answer (once, for this workspace, deny), the
// deny-on-timeout default, which refusals may be asked about at all
// (Askable), the saving of an answer "for this workspace" into the user
// config (SaveWorkspace) and the audit record of every answer.
//
// It must not decide the policy: a Question carries the rule that refused
// it, and Askable only reads that rule (netrule's own "no allow rule"; a
// file's decision as package policy classed it). Nothing it asks about is
// served by it: the caller (the network proxy, the supervisor) holds the
// access while the Session asks, and carries it out on a yes.
package ask

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"github.com/cordon-sandbox/cordon/policy"
)

// Kind is what a Question is about.
type Kind string

// The kinds of Question.
const (
	// Net is a TCP connection to a host and port (network-connect).
	Net Kind = "network-connect"
	// FileRead is a file opened for reading (file-read).
	FileRead Kind = "file-read"
	// FileWrite is a file opened for writing, or created (file-write).
	FileWrite Kind = "file-write"
)

// Question is one access the policy refused, held while a person is asked.
type Question struct {
	Kind Kind
	// Host and Port are a Net question's target (Host as the client
	// asked for it: a name or an IP literal).
	Host string
	Port int
	// Path is a file question's path, on the host.
	Path string
	// Program is the program that asked, when known ("" otherwise).
	Program string
	// Rule is the policy's rule that refused it.
	Rule string
	// Decision is a file question's decision by the policy, on the host
	// path (policy.Decider.DecideHost).
	Decision policy.Decision
}

// Target is what the question is about: host:port, or the path.
func (q Question) Target() string {
	if q.Kind == Net {
		return net.JoinHostPort(q.Host, strconv.Itoa(q.Port))
	}
	return q.Path
}

// Askable reports whether q may be asked about at all: only what no rule
// names. A network target is askable when the proxy's rules refused it
// for want of an allow entry (netrule.RuleNoAllow): a deny entry, a
// loopback, private, link-local or metadata address (refused by their
// kind), an address of the host, a malformed target and a TLS server name
// that differs never are. A file is askable when the policy's decision
// says so (policy.Decision.Askable: outside every read or write path; a
// deny entry, a protected path and cordon's own config never are), and
// it lies in none of the Session's Never trees (cordon's state).
func Askable(q Question) bool {
	switch q.Kind {
	case Net:
		return q.Rule == netrule.RuleNoAllow
	case FileRead, FileWrite:
		return q.Decision.Askable()
	}
	return false
}

// Answer is a person's answer to a Question.
type Answer int

// The answers.
const (
	// Deny refuses the access (also the answer when none came in time).
	Deny Answer = iota
	// Once allows this one access.
	Once
	// Workspace allows it, and the same target again, in this workspace:
	// saved in the user config.
	Workspace
)

// DefaultTimeout is how long a question waits for its answer before it
// is taken as Deny.
const DefaultTimeout = 30 * time.Second

// Prompter shows a question's line to a person and returns the key they
// pressed, one of keys (false when none came before timeout or ctx ended).
// Console is one.
type Prompter interface {
	Prompt(ctx context.Context, line string, keys string, timeout time.Duration) (byte, bool)
}

// Session asks the questions of one run: one at a time, each target once
// per run (an answer "for this workspace" or a deny is remembered for the
// rest of the run), saving "for this workspace" answers and recording
// every answer in the audit log.
type Session struct {
	// Prompter asks; nil answers every question Deny without asking.
	Prompter Prompter
	// Timeout is how long a question waits; 0 is DefaultTimeout.
	Timeout time.Duration
	// ConfigPath is the user config file "for this workspace" answers
	// are saved in; Workspace the workspace they are saved for.
	ConfigPath, Workspace string
	// Writable are the run's writable roots: the answer is not saved in
	// a config file inside one (the sandbox could have written it).
	Writable []string
	// Audit, when not nil, records each answer; SessionID, Command and
	// Mode fill its records.
	Audit                    func(audit.Record) error
	SessionID, Command, Mode string
	// Warn says what went wrong saving or recording (one line, without
	// "cordon: warning: ").
	Warn func(string)
	// Never are trees no file question is asked about: cordon's own
	// config, state and caches.
	Never []string

	mu   sync.Mutex
	seen map[string]Answer
}

// Ask asks about q, unless it is not Askable (false, no question) or its
// target was answered already this run, and reports whether the access
// may go ahead. It holds the caller until the answer.
func (s *Session) Ask(ctx context.Context, q Question) bool {
	if !s.Askable(q) {
		return false
	}
	key := string(q.Kind) + " " + q.Target()
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.seen[key]; ok {
		return a != Deny
	}
	a, why := Deny, "no answer"
	if s.Prompter != nil {
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		if k, ok := s.Prompter.Prompt(ctx, s.line(q, timeout), "owd", timeout); ok {
			switch k {
			case 'o':
				a, why = Once, "once"
			case 'w':
				a, why = Workspace, "for this workspace"
			default:
				why = "deny"
			}
		}
	}
	if a != Once {
		if s.seen == nil {
			s.seen = map[string]Answer{}
		}
		s.seen[key] = a
	}
	if a == Workspace {
		if err := SaveWorkspace(s.ConfigPath, s.Workspace, q, s.Writable); err != nil {
			s.warn(fmt.Sprintf("the answer for %s was not saved (it holds for this run only): %v", q.Target(), err))
		}
	}
	s.record(q, a, why)
	return a != Deny
}

// Askable is Askable(q), and for a file also outside every tree of
// Never.
func (s *Session) Askable(q Question) bool {
	if s == nil || !Askable(q) {
		return false
	}
	if q.Kind != Net {
		for _, n := range s.Never {
			if subpath.Within(q.Path, n) {
				return false
			}
		}
	}
	return true
}

// line is the question as the person reads it.
func (s *Session) line(q Question, timeout time.Duration) string {
	what := "network connection to"
	switch q.Kind {
	case FileRead:
		what = "reading"
	case FileWrite:
		what = "writing"
	}
	by := ""
	if q.Program != "" {
		by = " by " + q.Program
	}
	return fmt.Sprintf("cordon: allow %s %s%s? [o]nce / [w]orkspace / [d]eny (deny in %s) ", what, q.Target(), by, timeout.Round(time.Second))
}

// record writes the audit record of the answer a (why: its words).
func (s *Session) record(q Question, a Answer, why string) {
	if s.Audit == nil {
		return
	}
	r := audit.Record{SessionID: s.SessionID, Command: s.Command, Operation: string(q.Kind),
		Action: audit.ActionDenied, Rule: "asked: " + why, Mode: s.Mode}
	if a != Deny {
		r.Action = audit.ActionAllowed
	}
	if q.Kind == Net {
		r.Host, r.Port = q.Host, q.Port
	} else {
		r.Path = q.Path
	}
	if err := s.Audit(r); err != nil {
		s.warn(fmt.Sprintf("the answer for %s was not recorded in the audit log: %v", q.Target(), err))
	}
}

func (s *Session) warn(msg string) {
	if s.Warn != nil {
		s.Warn(msg)
	}
}
