//go:build linux

package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/helperspec"
	"github.com/cordon-sandbox/cordon/plan"
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
			readStatus(host, ch)
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
