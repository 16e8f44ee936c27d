package launch

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/cordon-sandbox/cordon/internal/ask"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"golang.org/x/sys/unix"
)

// terminal gives an interactive command a private pseudo-terminal: the
// sandbox never holds a descriptor of the user's real terminal, so it
// cannot inject input into it (TIOCSTI) or change its settings. cordon puts
// the real terminal in raw mode and copies bytes both ways.
type terminal struct {
	master   *os.File
	slave    *os.File
	host     *os.File // the real terminal (stdin)
	out      *os.File // where the pty's output goes
	saved    *unix.Termios
	winch    chan os.Signal
	copyDone chan struct{}
	once     sync.Once
	// stopIn ends copyIn, which closes inDone: the host terminal is read
	// only while the command runs, so nothing typed after it ended is
	// taken from whoever reads the terminal next (cordon shell, a
	// library host).
	stopIn *os.File
	inDone chan struct{}
	// console, when not nil, is where the questions of --ask are asked:
	// the command's output goes through it, and what is typed too.
	console *ask.Console
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// newTerminal returns nil unless the plan is interactive and stdin is a
// terminal. It replaces every standard stream that is a terminal with the
// pty's slave side.
func newTerminal(pl *plan.Plan, stdio *Stdio) (*terminal, error) {
	in, _ := stdio.Stdin.(*os.File)
	if !pl.Interactive || !IsTerminal(in) {
		return nil, nil
	}
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening a pseudo-terminal: %w", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlocking pseudo-terminal: %w", err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("naming pseudo-terminal: %w", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("opening pseudo-terminal: %w", err)
	}
	out, _ := stdio.Stdout.(*os.File)
	errOut, _ := stdio.Stderr.(*os.File)
	t := &terminal{master: master, slave: slave, host: in, out: out, copyDone: make(chan struct{}), console: stdio.Console}
	if !IsTerminal(t.out) {
		t.out = errOut
	}
	if t.console != nil && t.out != nil {
		t.console.SetOut(t.out)
	}
	// Start with the host terminal's settings and size.
	if tio, err := unix.IoctlGetTermios(int(t.host.Fd()), unix.TCGETS); err == nil {
		_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio)
		saved := *tio
		t.saved = &saved
	}
	t.resize()
	stdio.Stdin = slave
	if IsTerminal(out) {
		stdio.Stdout = slave
	}
	if IsTerminal(errOut) {
		stdio.Stderr = slave
	}
	return t, nil
}

func (t *terminal) resize() {
	if ws, err := unix.IoctlGetWinsize(int(t.host.Fd()), unix.TIOCGWINSZ); err == nil {
		_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
	}
}

// start puts the host terminal in raw mode and starts copying, once the
// child holds the slave side.
func (t *terminal) start(int) {
	if t == nil {
		return
	}
	t.slave.Close()
	if t.saved != nil {
		raw := *t.saved
		raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		raw.Oflag &^= unix.OPOST
		raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		raw.Cflag &^= unix.CSIZE | unix.PARENB
		raw.Cflag |= unix.CS8
		raw.Cc[unix.VMIN] = 1
		raw.Cc[unix.VTIME] = 0
		_ = unix.IoctlSetTermios(int(t.host.Fd()), unix.TCSETS, &raw)
	}
	t.winch = make(chan os.Signal, 1)
	signal.Notify(t.winch, syscall.SIGWINCH)
	go func() {
		for range t.winch {
			t.resize()
		}
	}()
	if r, w, err := os.Pipe(); err == nil {
		t.stopIn, t.inDone = w, make(chan struct{})
		go t.copyIn(r)
	}
	go func() {
		defer close(t.copyDone)
		switch {
		case t.console != nil:
			_, _ = io.Copy(t.console, t.master) // waits while a question is on screen
		case t.out != nil:
			_, _ = io.Copy(t.out, t.master) // ends with EIO when the last slave closes
		}
	}()
}

// copyIn copies what is typed on the host terminal to the pty until stop
// is closed (or either end fails): it reads only what poll says is there,
// so it never sits in a read of the host terminal when the run is over.
func (t *terminal) copyIn(stop *os.File) {
	defer close(t.inDone)
	defer stop.Close()
	fds := []unix.PollFd{{Fd: int32(t.host.Fd()), Events: unix.POLLIN}, {Fd: int32(stop.Fd()), Events: unix.POLLIN}}
	buf := make([]byte, 4096)
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) == 0 {
			continue
		}
		n, err := unix.Read(int(t.host.Fd()), buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if n <= 0 {
			return
		}
		in := buf[:n]
		if t.console != nil {
			in = t.console.Input(in) // a question's answer is not the command's
		}
		if _, err := t.master.Write(in); err != nil {
			return
		}
	}
}

// wait lets the pty's remaining output through after the command ended.
func (t *terminal) wait() {
	if t == nil {
		return
	}
	<-t.copyDone
}

// close restores the host terminal.
func (t *terminal) close() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		if t.stopIn != nil {
			t.stopIn.Close()
			<-t.inDone
		}
		if t.winch != nil {
			signal.Stop(t.winch)
			close(t.winch)
		}
		if t.saved != nil {
			_ = unix.IoctlSetTermios(int(t.host.Fd()), unix.TCSETS, t.saved)
		}
		t.master.Close()
	})
}
