//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// TestLandlockScopesAbstractSockets checks the Landlock layer under
// bubblewrap: with the network open the sandbox shares the host's network
// namespace, where abstract unix sockets (X11, D-Bus, IDE helpers) live;
// Landlock's scoping must refuse a connect to one, while the same connect
// from outside cordon works.
func TestLandlockScopesAbstractSockets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := os.Stat("/usr/bin/perl"); err != nil {
		skipOrFail(t, "perl is needed to connect to an abstract unix socket")
	}
	name := fmt.Sprintf("cordon-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	script := `perl -MSocket -e 'socket(S, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect(S, pack_sockaddr_un("\0` + name + `")) or die "connect: $!\n"; print "connected\n"'`
	off := e.sh(script, "--no-sandbox")
	if !strings.Contains(off.stdout, "connected") {
		t.Fatalf("unconfined connect must work: %s", off)
	}
	<-accepted
	r := e.sh(script, "--net", "open")
	if strings.Contains(r.stdout, "connected") || !strings.Contains(r.stderr, "connect: Operation not permitted") {
		t.Fatalf("confined connect to a host abstract socket must fail with EPERM: %s", r)
	}
	select {
	case <-accepted:
		t.Fatal("the host socket accepted a connection from the sandbox")
	case <-time.After(200 * time.Millisecond):
	}
}
