//go:build unix

package launch

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/monitor/seatbeltlog"
)

// maxLogStderr bounds what is kept of the stream's stderr, for an error.
const maxLogStderr = 512

// logWatch is a running log stream of one run's denials, passed on as
// monitor.Events.
type logWatch struct {
	cmd   *exec.Cmd
	watch func(monitor.Event)
	p     *seatbeltlog.Parser

	ready     chan struct{} // closed at the first line, on either stream
	readyOnce sync.Once
	outDone   chan struct{} // closed when stdout ended
	errDone   chan struct{} // closed when stderr ended

	mu      sync.Mutex
	denials int64     // denials passed on, duplicates counted
	last    time.Time // when the last one arrived
	stderr  strings.Builder
	scanErr error
}

// startLogWatch starts argv (seatbeltlog.Argv: /usr/bin/log stream ...)
// with an empty environment in a process group of its own (a Ctrl-C at
// the terminal is the command's, not the stream's), and waits until it
// has printed its first line on stdout, or its header on stderr, for at
// most ready: an error it prints instead, or its end, fails the start. Every denial it then
// prints is passed to watch, one at a time, from one goroutine.
func startLogWatch(argv []string, p *seatbeltlog.Parser, watch func(monitor.Event), ready time.Duration) (*logWatch, error) {
	w := &logWatch{
		cmd:     &exec.Cmd{Path: argv[0], Args: argv, Env: []string{}, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}},
		watch:   watch,
		p:       p,
		ready:   make(chan struct{}),
		outDone: make(chan struct{}),
		errDone: make(chan struct{}),
	}
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("the log stream's output: %w", err)
	}
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("the log stream's error output: %w", err)
	}
	if err := w.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	go w.readOut(stdout)
	go w.readStderr(stderr)
	t := time.NewTimer(ready)
	defer t.Stop()
	select {
	case <-w.ready:
		return w, nil
	case <-w.outDone:
		select {
		case <-w.ready:
			// It streamed, then ended at once: both were ready when
			// the select looked, and it chose this one.
			return w, nil
		default:
		}
		// It ended before saying anything: its stderr says why.
		<-w.errDone
		err = errors.New("it ended before it started streaming")
	case <-t.C:
		err = fmt.Errorf("it printed nothing in %s", ready)
	}
	w.kill()
	if s := w.stderrText(); s != "" {
		err = fmt.Errorf("%w: %s", err, s)
	}
	return nil, fmt.Errorf("%s: %w", strings.Join(argv[:2], " "), err)
}

// readOut passes on the denials of the stream's stdout.
func (w *logWatch) readOut(r io.Reader) {
	defer close(w.outDone)
	err := seatbeltlog.Scan(r, func(line []byte) {
		w.readyOnce.Do(func() { close(w.ready) })
		d, ok := w.p.Parse(line)
		if !ok {
			return
		}
		for range d.Count {
			w.watch(d.Event)
		}
		w.mu.Lock()
		w.denials += int64(d.Count)
		w.last = time.Now()
		w.mu.Unlock()
	})
	w.mu.Lock()
	w.scanErr = err
	w.mu.Unlock()
}

// readStderr keeps the beginning of the stream's stderr; the header
// there is its first line too.
func (w *logWatch) readStderr(r io.Reader) {
	defer close(w.errDone)
	_ = seatbeltlog.Scan(r, func(line []byte) {
		if seatbeltlog.IsHeader(line) {
			w.readyOnce.Do(func() { close(w.ready) })
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := maxLogStderr - w.stderr.Len(); n > 0 {
			if w.stderr.Len() > 0 {
				w.stderr.WriteString("; ")
			}
			w.stderr.WriteString(strings.ToValidUTF8(string(line[:min(len(line), n)]), "?"))
		}
	})
}

func (w *logWatch) stderrText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(w.stderr.String())
}

// kill ends the stream and waits for it and its readers.
func (w *logWatch) kill() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL) // its group
	_ = w.cmd.Process.Kill()
	<-w.outDone
	<-w.errDone
	_ = w.cmd.Wait()
}

// stop reads on for the grace period after the command ended at end
// (grace, longer while denials still arrive, up to graceMax), then ends
// the stream: every denial read has been passed on when it returns. It
// returns how many there were and, when the stream ended by itself
// before, a degraded line saying that later denials were not seen.
func (w *logWatch) stop(end time.Time, grace, quiet, graceMax time.Duration) (int64, string) {
	deadline, hard := end.Add(grace), end.Add(graceMax)
	for {
		select {
		case <-w.outDone:
		case <-time.After(time.Until(deadline)):
		}
		w.mu.Lock()
		last := w.last
		w.mu.Unlock()
		if !isClosed(w.outDone) && last.After(deadline.Add(-quiet)) && deadline.Before(hard) {
			if deadline = deadline.Add(quiet); deadline.After(hard) {
				deadline = hard
			}
			continue
		}
		break
	}
	ended := isClosed(w.outDone)
	w.kill()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !ended {
		return w.denials, ""
	}
	why := "it ended"
	if w.scanErr != nil {
		why = w.scanErr.Error()
	} else if st := w.cmd.ProcessState; st != nil {
		why = "it ended (" + st.String() + ")"
	}
	if s := strings.TrimSpace(w.stderr.String()); s != "" {
		why += ": " + s
	}
	return w.denials, fmt.Sprintf("the violation monitor's log stream (%s) stopped during the run, %s: what was denied after that is not reported", seatbeltlog.LogPath, why)
}

// isClosed reports whether c is closed.
func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
