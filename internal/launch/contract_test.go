//go:build linux

package launch

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
	"golang.org/x/sys/unix"
)

// TestNegativeTimeoutRefused: a plan's timeout is a duration, and one
// below zero is refused before anything runs, never dropped.
func TestNegativeTimeoutRefused(t *testing.T) {
	dir := t.TempDir()
	mark := filepath.Join(dir, "ran")
	for _, name := range []backend.Name{backend.None, backend.Bwrap, backend.Landlock} {
		t.Run(string(name), func(t *testing.T) {
			pl := &plan.Plan{Backend: name, Argv: []string{"/usr/bin/touch", mark}, Command: []string{"touch", mark},
				Dir: dir, Timeout: -time.Second}
			res, err := Run(context.Background(), pl, Stdio{})
			var se *SetupError
			if !errors.As(err, &se) || res != nil {
				t.Fatalf("Run with a negative timeout: %+v, %v; want a setup error", res, err)
			}
			if _, err := os.Lstat(mark); err == nil {
				t.Error("the command ran")
			}
		})
	}
}

// TestCreatePlaceholders: each placeholder is created as the kind the plan
// says, whatever the bwrap argv holds (here none).
func TestCreatePlaceholders(t *testing.T) {
	dir := t.TempDir()
	pl := &plan.Plan{Backend: backend.Bwrap, Placeholders: []plan.Placeholder{
		{Path: filepath.Join(dir, "hooks"), Kind: plan.PlaceholderDir},
		{Path: filepath.Join(dir, ".envrc"), Kind: plan.PlaceholderFile},
		{Path: filepath.Join(dir, "commondir"), Kind: plan.PlaceholderCommondir},
	}}
	if err := createPlaceholders(pl); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		dir     bool
		content string
	}{{"hooks", true, ""}, {".envrc", false, ""}, {"commondir", false, ".\n"}} {
		p := filepath.Join(dir, tc.name)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() != tc.dir {
			t.Errorf("%s: directory %v, want %v", tc.name, fi.IsDir(), tc.dir)
			continue
		}
		if !tc.dir {
			if b, err := os.ReadFile(p); err != nil || string(b) != tc.content {
				t.Errorf("%s holds %q (%v), want %q", tc.name, b, err, tc.content)
			}
		}
	}
	bad := &plan.Plan{Placeholders: []plan.Placeholder{{Path: filepath.Join(dir, "x"), Kind: "socket"}}}
	if err := createPlaceholders(bad); err == nil {
		t.Error("a placeholder of an unknown kind was created")
	}
	if _, err := os.Lstat(filepath.Join(dir, "x")); err == nil {
		t.Error("a placeholder of an unknown kind exists")
	}
}

// TestReadStatusMalformed: an exec failure the host cannot parse is a
// setup failure (125), never exit status 0.
func TestReadStatusMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs [][]byte
		want *ExecError
		deg  []string
	}{
		{"exec failed", [][]byte{helperspec.ExecFailedMessage(127, "x: not found")}, &ExecError{Code: 127, Msg: "x: not found"}, nil},
		{"malformed", [][]byte{[]byte("Exx oops")}, &ExecError{Code: result.ExitSetup}, nil},
		{"ready", [][]byte{helperspec.ReadyMessage([]string{"a", "b"})}, nil, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			host, child := os.NewFile(uintptr(fds[0]), "host"), os.NewFile(uintptr(fds[1]), "child")
			defer host.Close()
			for _, m := range tc.msgs {
				if _, err := child.Write(m); err != nil {
					t.Fatal(err)
				}
			}
			child.Close()
			ch := make(chan status, 4)
			readStatus(host, ch, func(_ helperspec.Listener, fds []int) { closeFds(fds) }, func(fd int, _ []string) { closeFds([]int{fd}) })
			var got []status
			for st := range ch {
				got = append(got, st)
			}
			last := got[len(got)-1]
			switch {
			case tc.want == nil:
				if !last.ready || last.execErr != nil || !slices.Equal(got[0].degraded, tc.deg) {
					t.Errorf("statuses %+v", got)
				}
			case last.execErr == nil || last.execErr.Code != tc.want.Code || tc.want.Msg != "" && last.execErr.Msg != tc.want.Msg:
				t.Errorf("statuses %+v, want exec error %+v", got, tc.want)
			}
		})
	}
}

// TestReadStatusListeners: the listening descriptors the helper hands over
// before readiness (helperspec.MsgListener) reach the listener callback
// with what they are; a malformed message's descriptors, and any sent
// after readiness, are closed, never served.
func TestReadStatusListeners(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[0]), "host")
	defer host.Close()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	lfd := int(lf.Fd())
	child := fds[1]
	sendTo := func(msg []byte, rights ...int) {
		t.Helper()
		var oob []byte
		if len(rights) > 0 {
			oob = unix.UnixRights(rights...)
		}
		if err := unix.Sendmsg(child, msg, oob, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	http := helperspec.Listener{Kind: helperspec.ListenHTTP, Port: 3128}
	sendTo(helperspec.ListenerMessage(http, "4"), lfd)
	sendTo([]byte("Lhttp 3128 46"), lfd) // one descriptor for two families
	sendTo(helperspec.ReadyMessage(nil))
	sendTo(helperspec.ListenerMessage(http, "4"), lfd) // after readiness
	unix.Close(child)
	type got struct {
		l   helperspec.Listener
		fds []int
	}
	var calls []got
	ch := make(chan status, 4)
	readStatus(host, ch, func(l helperspec.Listener, fds []int) { calls = append(calls, got{l, fds}) }, func(fd int, _ []string) { closeFds([]int{fd}) })
	for range ch {
	}
	if len(calls) != 1 || calls[0].l != http || len(calls[0].fds) != 1 {
		t.Fatalf("listener calls %+v, want one http listener with one descriptor", calls)
	}
	fd := calls[0].fds[0]
	defer unix.Close(fd)
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v != 1 {
		t.Errorf("the descriptor handed over is not the listening socket: %v %v", v, err)
	}
}
