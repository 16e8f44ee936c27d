// Package dnsstub is the name server of a sandbox whose network is denied:
// served by cordon on the host, on a socket of the sandbox's own loopback
// (127.0.0.1:53, which its resolv.conf names), it answers every query at
// once with NXDOMAIN and records the names asked, so that a lookup fails
// within a millisecond instead of waiting for a server that cannot be
// reached, and cordon names each host after the run.
//
// It owns the answer and the record; it never resolves a name and never
// sends a packet anywhere but back to the asker.
package dnsstub

import (
	"errors"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/dns/dnsmessage"
)

// MaxNames bounds the distinct names kept; the rest are counted.
const MaxNames = 50

// Server answers queries on packet connections and records their names.
type Server struct {
	// Skip reports names not to record (the sandbox's own host name).
	Skip func(name string) bool
	// OnName, when not nil, is called with each name recorded, once.
	OnName func(name string)

	mu    sync.Mutex
	names []string
	seen  map[string]bool
	more  int
}

// Serve answers the queries arriving on pc until it is closed.
func (s *Server) Serve(pc net.PacketConn) error {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if out, ok := s.Answer(buf[:n]); ok {
			_, _ = pc.WriteTo(out, addr)
		}
	}
}

// Answer is the reply to one query message and whether there is one: a
// query (opcode QUERY, one question) is answered NXDOMAIN and its name
// recorded (but reverse lookups, under .arpa); another opcode gets
// NOTIMP; a message that does not parse, or a response, gets nothing.
func (s *Server) Answer(msg []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil || h.Response {
		return nil, false
	}
	qs, err := p.AllQuestions()
	if err != nil {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: dnsmessage.RCodeNameError}
	if h.OpCode != 0 || len(qs) != 1 {
		rh.RCode = dnsmessage.RCodeNotImplemented
		if len(qs) != 1 {
			rh.RCode = dnsmessage.RCodeFormatError
		}
		qs = nil
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, false
	}
	for _, q := range qs {
		if err := b.Question(q); err != nil {
			return nil, false
		}
		s.record(q)
	}
	out, err := b.Finish()
	if err != nil {
		return nil, false
	}
	return out, true
}

// record keeps q's name, canonical (lower case, no trailing dot).
func (s *Server) record(q dnsmessage.Question) {
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	if name == "" || name == "arpa" || strings.HasSuffix(name, ".arpa") || q.Type == dnsmessage.TypePTR {
		return
	}
	if s.Skip != nil && s.Skip(name) {
		return
	}
	s.mu.Lock()
	if s.seen[name] {
		s.mu.Unlock()
		return
	}
	if len(s.names) >= MaxNames {
		s.more++
		s.mu.Unlock()
		return
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[name] = true
	s.names = append(s.names, name)
	s.mu.Unlock()
	if s.OnName != nil {
		s.OnName(name)
	}
}

// Names are the distinct names asked, in the order first asked, and how
// many queries asked names past the first MaxNames.
func (s *Server) Names() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.names...), s.more
}

// Reset forgets the names recorded so far: a session's sandbox serves one
// name server for many commands, and each names its own lookups.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names, s.seen, s.more = nil, nil, 0
}
