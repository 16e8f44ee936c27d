// Package audit writes cordon's audit log: one JSON object per line, in the
// format of cordon's audit record (timestamp, session_id, command,
// operation, path or host/port, action, rule, mode; see Record).
//
// A Log is safe for concurrent use by several goroutines, and several
// processes may append to the same file: it is opened with O_APPEND and each
// record is written with a single write(2) call, so records never interleave.
// A Log with a size bound rotates the file (to FILE.1) under an exclusive
// lock once it passes the bound; a process still appending to the old file
// appends to FILE.1, so no record is lost (see rotate.go). Read reads both
// back for cordon violations.
//
// The package must not decide what is a violation or which log a command
// writes: callers (the CLI, the MCP server, launch) do, from the Policy.
package audit

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/result"
)

// The actions a record can carry.
const (
	// ActionDenied is an operation the policy refused.
	ActionDenied = "denied"
	// ActionAllowed is an operation the policy allowed (logged only with
	// audit.log_allowed).
	ActionAllowed = "allowed"
	// ActionWarned is an operation that violated the policy but was let
	// through (on_violation: warn).
	ActionWarned = "warned"
)

// OpCredentialUse is the operation of a request that carried a
// credential's placeholder to its host: the proxy put the secret in
// (allowed) or refused the request by the credential's rules (denied).
const OpCredentialUse = "credential-use"

// Record is one audit log entry. Path is set for file operations, Host and
// Port for network operations.
type Record struct {
	// Timestamp is when the operation happened; Log.Record fills in the
	// current time when it is zero. It is written in RFC 3339, UTC.
	Timestamp time.Time `json:"-"`
	// SessionID identifies the cordon session (one run, one MCP server).
	SessionID string `json:"session_id"`
	// Command is the command or tool that attempted the operation.
	Command string `json:"command"`
	// Operation is file-read, file-write, file-exec, network-connect, ...
	Operation string `json:"operation"`
	// Path is the file concerned.
	Path string `json:"path,omitempty"`
	// Host is the network host concerned.
	Host string `json:"host,omitempty"`
	// Port is the network port concerned.
	Port int `json:"port,omitempty"`
	// Credential is the credential a credential-use record is about.
	Credential string `json:"credential,omitempty"`
	// Method is the HTTP method of a credential-use record's request.
	Method string `json:"method,omitempty"`
	// Address is the address a network host resolved to that the
	// decision was about (the one connected to, or refused), when there
	// is one.
	Address string `json:"address,omitempty"`
	// Action is denied, allowed or warned.
	Action string `json:"action"`
	// Rule is the policy entry that decided.
	Rule string `json:"rule"`
	// Mode is the sandbox mode (off, permissive, standard, strict).
	Mode string `json:"mode"`
}

// MarshalJSON encodes the record with its timestamp first.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	ts, err := json.Marshal(r.Timestamp.UTC().Format(time.RFC3339Nano))
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(ts)+len(rest)+16)
	out = append(out, `{"timestamp":`...)
	out = append(out, ts...)
	if len(rest) > 2 {
		out = append(out, ',')
		out = append(out, rest[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// UnmarshalJSON decodes a record written by MarshalJSON.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var aux struct {
		Timestamp string `json:"timestamp"`
		plain
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*r = Record(aux.plain)
	if aux.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, aux.Timestamp)
		if err != nil {
			return fmt.Errorf("audit record timestamp: %w", err)
		}
		r.Timestamp = t
	}
	return nil
}

// Log appends records to a JSON-lines file. A nil *Log discards records.
type Log struct {
	mu   sync.Mutex
	f    *os.File
	path string
	now  func() time.Time
	// max is the size at which the file is rotated (0: never).
	max int64
}

// Open opens (creating it with mode 0600, and its missing parent directories
// with mode 0700) the audit log at path for appending. Once the file
// reaches maxSize bytes it is rotated to path+".1" (see rotate); 0 never
// rotates.
func Open(path string, maxSize int64) (*Log, error) {
	if path == "" {
		return nil, errors.New("audit: no log file given")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: creating the log directory: %w", err)
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, path: path, now: time.Now, max: max(maxSize, 0)}, nil
}

// openAppend opens path for appending, creating it with mode 0600; it
// refuses what is not a regular file.
func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: opening the log: %w", err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("audit: %s is not a regular file", path)
	}
	return f, nil
}

// Path returns the log file's path.
func (l *Log) Path() string {
	if l == nil {
		return ""
	}
	return l.path
}

// Record appends r as one line, written with a single write call. A zero
// Timestamp is set to the current time. When the line takes the file to
// its bound, the file is rotated after it; an error doing so is returned
// (the record itself was written).
func (l *Log) Record(r Record) error {
	if l == nil {
		return nil
	}
	if r.Timestamp.IsZero() {
		r.Timestamp = l.now()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("audit: encoding record: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return errors.New("audit: log is closed")
	}
	if l.max > 0 {
		if err := l.follow(); err != nil {
			return fmt.Errorf("audit: reopening %s after its rotation: %w", l.path, err)
		}
	}
	if _, err := l.f.Write(b); err != nil {
		return fmt.Errorf("audit: writing record: %w", err)
	}
	if l.max > 0 {
		if st, err := l.f.Stat(); err == nil && st.Size() >= l.max {
			if err := l.rotate(); err != nil {
				return fmt.Errorf("audit: rotating %s: %w", l.path, err)
			}
		}
	}
	return nil
}

// Close closes the log file.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// NewSessionID returns a new random session identifier: the UTC start time
// and 8 random hex digits, e.g. "20260102T150405Z-1a2b3c4d".
func NewSessionID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// PlantedRecords are the records of what a run planted (see
// result.Planted): a file-write each, denied when cordon disarmed it,
// warned when it was left armed.
func PlantedRecords(sessionID, command, mode string, planted []result.Planted) []Record {
	out := make([]Record, 0, len(planted))
	for _, p := range planted {
		action := ActionWarned
		if p.Disarmed {
			action = ActionDenied
		}
		out = append(out, Record{SessionID: sessionID, Command: command, Operation: "file-write",
			Path: p.Path, Action: action, Rule: p.Rule, Mode: mode})
	}
	return out
}
