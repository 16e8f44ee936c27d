package launch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/result"
)

// runSandbox runs a bwrap plan, or a Landlock-only plan, in which the
// helper runs directly on the host: no mount points to lock, no pid
// namespace (the command's process group, and the cgroup when there is
// one, are what a timeout kills), and a private directory for /tmp. Like
// os/exec's Cmd.Run it is start, then wait: start prepares the host side
// and starts bwrap (or the helper); supervise follows the helper's status
// messages, signals, the timeout and the context until the sandbox exits;
// finish disarms what the run planted and turns the end into a Result.
func runSandbox(ctx context.Context, pl *plan.Plan, stdio Stdio, held *workspaceLock) (*result.Result, error) {
	if sameWriter(stdio.Stdout, stdio.Stderr) {
		// Two copiers (bwrap's stdout, the command's stderr at
		// FdStderr) would write to it at once, as os/exec never does.
		if _, ok := stdio.Stdout.(*os.File); !ok {
			w := &syncWriter{w: stdio.Stdout}
			stdio.Stdout, stdio.Stderr = w, w
		}
	}
	r := &sandboxRun{pl: pl, stdio: stdio, pidfd: -1, held: held,
		res: &result.Result{Backend: pl.Backend, Degraded: pl.Degraded}}
	defer r.closeAfterWait()
	if err := r.start(); err != nil {
		return nil, err
	}
	waitErr := r.supervise(ctx)
	return r.finish(waitErr)
}

// readyTimeout bounds how long bwrap may take to set up the sandbox (a
// variable for the supervision tests).
var readyTimeout = 30 * time.Second

// signalReadyWait is how long a signal that arrives before the helper's
// readiness report waits for it before the sandbox is killed instead.
const signalReadyWait = 500 * time.Millisecond

// stderrFile returns a descriptor for w: w itself if it is a file, /dev/null
// for nil, else the write end of a pipe copied into w. closeParent closes
// the parent's copy after the child started; done is closed when the copy
// has finished.
func stderrFile(w io.Writer) (f *os.File, closeParent func(), done chan struct{}, err error) {
	done = make(chan struct{})
	if file, ok := w.(*os.File); ok && file != nil {
		close(done)
		return file, func() {}, done, nil
	}
	if w == nil {
		f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("opening %s: %w", os.DevNull, err)
		}
		close(done)
		return f, func() { f.Close() }, done, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("creating stderr pipe: %w", err)
	}
	go func() {
		defer close(done)
		_, _ = io.Copy(w, r)
		r.Close()
	}()
	return pw, func() { pw.Close() }, done, nil
}

// setupFailure turns bwrap's stderr into one line.
func setupFailure(bwrapErr string, waitErr error) error {
	msg := strings.TrimSpace(bwrapErr)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(msg[i+1:])
	}
	if msg == "" {
		if waitErr != nil {
			msg = waitErr.Error()
		} else {
			msg = "bwrap exited before the sandbox was ready"
		}
	}
	hint := ""
	switch {
	case strings.Contains(msg, "Can't mount proc"):
		hint = "; this looks like a container that masks parts of /proc, where bwrap cannot mount its own (docs/containers.md says how to allow it)"
	case userNSFailure(msg) || strings.Contains(msg, "Operation not permitted"):
		hint = "; user namespaces look unavailable here: see cordon status"
	}
	return fmt.Errorf("sandbox setup failed: %s%s", msg, hint)
}

// userNSFailure recognises bwrap's messages for namespaces it could not
// make here: a user namespace disabled, limited to zero or forbidden by
// AppArmor, or a /proc it cannot mount in one (a container that masks
// parts of its own).
func userNSFailure(bwrapErr string) bool {
	for _, m := range []string{"No permissions to create new namespace", "Creating new namespace failed", "setting up uid map", "creating new namespace", "Can't mount proc"} {
		if strings.Contains(bwrapErr, m) {
			return true
		}
	}
	return false
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// signalTree delivers sig to the command's process group, or to the
// command alone if it has none of its own.
func signalTree(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = syscall.Kill(pid, sig)
	}
}

// syncWriter serialises the writes of several copiers to one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
