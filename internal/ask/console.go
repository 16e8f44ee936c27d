package ask

import (
	"context"
	"io"
	"strings"
	"sync"
	"time"
)

// Console is the Prompter of a run on a terminal: the run's command has a
// pseudo-terminal of its own, which cordon copies to and from the user's
// (package launch), in raw mode. While a question is on screen, cordon
// owns the terminal: the command's output waits (Write blocks) and what
// is typed answers the question (Input keeps it from the command).
type Console struct {
	// mu is held by each Write and for the whole of a question.
	mu  sync.Mutex
	out io.Writer
	// qmu makes questions one at a time.
	qmu  sync.Mutex
	wait chan byte // not nil while a question waits for a key
	wmu  sync.Mutex
}

// SetOut sets the user's terminal, where the command's output and the
// questions go.
func (c *Console) SetOut(w io.Writer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = w
}

// Write writes the command's output p to the terminal, after any question
// on screen is answered.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return len(p), nil
	}
	return c.out.Write(p)
}

// Input takes what was typed, b, and returns what goes on to the command:
// all of it, unless a question waits, which then takes it all (its
// answer is the first key; the rest was typed at the question too).
func (c *Console) Input(b []byte) []byte {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.wait == nil || len(b) == 0 {
		return b
	}
	for _, k := range b {
		select {
		case c.wait <- k:
		default:
		}
	}
	return nil
}

// Prompt shows line and waits for one of keys (a lower-case key; its
// upper case counts too; Ctrl-C and Ctrl-D answer the last of keys, the
// refusal), at most timeout.
func (c *Console) Prompt(ctx context.Context, line string, keys string, timeout time.Duration) (byte, bool) {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return 0, false
	}
	ch := make(chan byte, 16)
	c.wmu.Lock()
	c.wait = ch
	c.wmu.Unlock()
	defer func() {
		c.wmu.Lock()
		c.wait = nil
		c.wmu.Unlock()
	}()
	_, _ = io.WriteString(c.out, "\r\n"+line)
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case k := <-ch:
			if k >= 'A' && k <= 'Z' {
				k += 'a' - 'A'
			}
			if k == 3 || k == 4 {
				k = keys[len(keys)-1]
			}
			if strings.IndexByte(keys, k) < 0 {
				continue
			}
			_, _ = io.WriteString(c.out, string(k)+"\r\n")
			return k, true
		case <-t.C:
			_, _ = io.WriteString(c.out, "(no answer: denied)\r\n")
			return 0, false
		case <-ctx.Done():
			_, _ = io.WriteString(c.out, "(the run ended: denied)\r\n")
			return 0, false
		}
	}
}
