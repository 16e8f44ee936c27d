package dnsstub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func query(t *testing.T, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	out, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAnswer: every query is answered NXDOMAIN with its ID and question,
// and its name recorded once, canonical; reverse lookups, the skipped
// names and what is no query are not recorded; past MaxNames names are
// counted.
func TestAnswer(t *testing.T) {
	var told []string
	s := &Server{Skip: func(n string) bool { return n == "cordon" }, OnName: func(n string) { told = append(told, n) }}
	for i, q := range []struct {
		name string
		typ  dnsmessage.Type
	}{{"Registry.Example.COM.", dnsmessage.TypeA}, {"registry.example.com.", dnsmessage.TypeAAAA}, {"1.0.0.127.in-addr.arpa.", dnsmessage.TypePTR}, {"cordon.", dnsmessage.TypeA}, {"b.example.", dnsmessage.TypeHTTPS}} {
		out, ok := s.Answer(query(t, uint16(100+i), q.name, q.typ))
		if !ok {
			t.Fatalf("%s: no answer", q.name)
		}
		var p dnsmessage.Parser
		h, err := p.Start(out)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := p.AllQuestions()
		if err != nil || !h.Response || h.ID != uint16(100+i) || h.RCode != dnsmessage.RCodeNameError || len(qs) != 1 || qs[0].Name.String() != q.name || qs[0].Type != q.typ {
			t.Errorf("%s: answer %+v %+v (%v)", q.name, h, qs, err)
		}
	}
	if names, more := s.Names(); !slices.Equal(names, []string{"registry.example.com", "b.example"}) || more != 0 || !slices.Equal(told, names) {
		t.Errorf("names %q, %d more, told %q", names, more, told)
	}
	for _, junk := range [][]byte{nil, {1, 2, 3}, make([]byte, 12)} {
		if out, ok := s.Answer(junk); ok && len(junk) < 12 {
			t.Errorf("answered %x with %x", junk, out)
		}
	}
	resp := query(t, 7, "x.example.", dnsmessage.TypeA)
	resp[2] |= 0x80 // QR: a response
	if _, ok := s.Answer(resp); ok {
		t.Error("answered a response")
	}
	for i := range MaxNames + 5 {
		s.Answer(query(t, 1, fmt.Sprintf("h%d.example.", i), dnsmessage.TypeA))
	}
	if names, more := s.Names(); len(names) != MaxNames || more != 7 {
		t.Errorf("%d names, %d more; want %d, 7", len(names), more, MaxNames)
	}
}

// TestServe: Go's resolver, pointed at the server on a loopback port,
// fails at once with "no such host", and the name is recorded.
func TestServe(t *testing.T) {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	done := make(chan error, 1)
	go func() { done <- s.Serve(pc) }()
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	start := time.Now()
	_, err = r.LookupHost(context.Background(), "wanted.example")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound || time.Since(start) > time.Second {
		t.Errorf("lookup: %v after %s", err, time.Since(start))
	}
	pc.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if names, _ := s.Names(); !slices.Equal(names, []string{"wanted.example"}) {
		t.Errorf("names %q", names)
	}
}
