package launch

import (
	"bytes"
	"encoding/json"
	"os"
)

// sessionJournal is the journal of a session's commands (see
// writeJournal): one file for the session, created for its first command
// that needs one and rewritten in place for each command after, rather
// than a file made and removed for every command. Between commands it
// names no roots, so that a run sweeping it after the host was killed
// then checks nothing (see sweepJournals); while the host lives, other
// runs pass it over (its name gives the host's pid). Each content is
// written by one pwrite at offset 0, padded with spaces to the length of
// the longest written before (JSON allows them after the value): a
// process killed between two system calls never leaves a file that reads
// as neither. Commands of a session run one at a time (Session.mu).
type sessionJournal struct {
	f        *os.File
	stateDir string
	size     int // the longest content written, the file's length
}

// record writes j as the journal of the command starting, in stateDir,
// and reports whether it could: a command that cannot keep it in place
// (another state directory, a write that failed) starts a new file.
func (s *sessionJournal) record(stateDir string, j journal) bool {
	if s.f != nil && s.stateDir == stateDir && s.write(j) {
		return true
	}
	s.close()
	f := createJournal(stateDir, j)
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		os.Remove(f.Name())
		f.Close()
		return false
	}
	s.f, s.stateDir, s.size = f, stateDir, int(fi.Size())
	return true
}

// idle says that no command runs: the journal names no roots. When it
// cannot, the file is removed (a kill then leaves nothing to sweep).
func (s *sessionJournal) idle() {
	if s.f != nil && !s.write(journal{}) {
		s.close()
	}
}

// write puts j in the file whole, with the host's pid, by one pwrite.
func (s *sessionJournal) write(j journal) bool {
	j.Pid = os.Getpid()
	b, err := json.Marshal(j)
	if err != nil {
		return false
	}
	if len(b) < s.size {
		b = append(b, bytes.Repeat([]byte{' '}, s.size-len(b))...)
	}
	if n, err := s.f.WriteAt(b, 0); err != nil || n != len(b) {
		return false
	}
	s.size = len(b)
	return true
}

// close removes the journal: the session ends, or its file cannot be
// kept.
func (s *sessionJournal) close() {
	if s.f == nil {
		return
	}
	os.Remove(s.f.Name())
	s.f.Close()
	s.f, s.stateDir, s.size = nil, "", 0
}
