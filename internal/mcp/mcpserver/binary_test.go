//go:build unix

package mcpserver

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/workspace"
)

// cordonMCP builds cordon and starts `cordon mcp --workspace WS` with args,
// under a fake home, and returns a raw client on its stdio and the
// workspace.
func cordonMCP(t *testing.T, args ...string) (*rawClient, string, *exec.Cmd) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := cordonBinary(t)
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"mcp", "--workspace", ws}, args...)...)
	cmd.Dir = ws
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		in.Close()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("cordon mcp: %v\nstderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("cordon mcp did not exit when its input closed")
		}
	})
	c := newRawClient(t, in, bufio.NewReaderSize(out, 1<<20))
	c.initialize("2025-06-18")
	return c, ws, cmd
}

// TestCordonMCPFrames drives the real `cordon mcp` over stdio: malformed
// lines get their JSON-RPC errors and the server answers the next request;
// a write_file of the whole write limit (a line of about 120 MB) is
// served; a line over the frame limit is refused and the server goes on;
// timeout_seconds cannot lift the policy's --timeout.
func TestCordonMCPFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cordon and sends 400 MB through it: skipped with -short")
	}
	c, ws, cmd := cordonMCP(t, "--timeout", "1s")

	t.Run("malformed lines", func(t *testing.T) {
		c.t = t
		expectMalformedLines(t, c)
	})

	t.Run("write of the write limit", func(t *testing.T) {
		c.t = t
		// Text with quotes, backslashes, tabs and newlines, which JSON
		// escapes: 100 MiB of content make a line of about 120 MB.
		line := "\tfmt.Println(\"a\", x, y) // a comment with <tag> & é, and some ordinary text\n"
		size := int(workspace.DefaultLimits.MaxWriteBytes)
		n := size / len(line)
		tail := strings.Repeat("z", size-n*len(line))
		esc, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		esc = esc[1 : len(esc)-1]
		head := `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.go","content":"`
		w := bufio.NewWriterSize(c.w, 1<<20)
		h := sha256.New()
		start := time.Now()
		frame := len(head) + n*len(esc) + len(tail) + 4
		w.WriteString(head)
		for range n {
			w.Write(esc)
			h.Write([]byte(line))
		}
		w.WriteString(tail + `"}}}` + "\n")
		h.Write([]byte(tail))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// The bound is for a hung server, not a speed: 12.5 s on an idle
		// 2-core machine, over 60 s when CI's heaviest tests (200
		// sandboxes at once) share the cores with it.
		b := c.recv(5 * time.Minute)
		took := time.Since(start)
		if got := replyKind(t, b); got != `ok "big"` || !bytes.Contains(b, []byte(fmt.Sprintf("(%d bytes, created)", size))) || bytes.Contains(b, []byte(`"isError":true`)) {
			t.Fatalf("write_file of %d bytes in a %d-byte line: %.300q", size, frame, b)
		}
		f, err := os.Open(filepath.Join(ws, "big.go"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		h2 := sha256.New()
		if _, err := io.Copy(h2, f); err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(h.Sum(nil)) != hex.EncodeToString(h2.Sum(nil)) {
			t.Error("big.go differs from what was sent")
		}
		t.Logf("write_file: %d bytes of content in a %d-byte line served in %s; %s", size, frame, took.Round(time.Millisecond), peakMemory(cmd.Process.Pid))
		c.untilID(1, 10*time.Second)
	})

	t.Run("line over the frame limit", func(t *testing.T) {
		c.t = t
		w := bufio.NewWriterSize(c.w, 1<<20)
		w.WriteString(`{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"write_file","arguments":{"path":"huge.txt","content":"`)
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range MaxFrameBytes>>20 + 1 {
			w.Write(chunk)
		}
		w.WriteString(`"}}}` + "\n")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		// The bound is for a hung server, not a speed: 12.5 s on an idle
		// 2-core machine, over 60 s when CI's heaviest tests (200
		// sandboxes at once) share the cores with it.
		b := c.recv(5 * time.Minute)
		if got := replyKind(t, b); got != "-32600 null" || !bytes.Contains(b, []byte("limit of 268435456 bytes (256 MiB)")) {
			t.Errorf("over the limit: %.300q", b)
		}
		if _, err := os.Stat(filepath.Join(ws, "huge.txt")); !os.IsNotExist(err) {
			t.Errorf("huge.txt: %v", err)
		}
		c.untilID(2, 10*time.Second)
		t.Logf("after the line over the limit: %s", peakMemory(cmd.Process.Pid))
	})

	t.Run("timeout_seconds cannot lift --timeout", func(t *testing.T) {
		c.t = t
		for i, secs := range []string{"9223372037", "3601", "5"} {
			start := time.Now()
			c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"t%d","method":"tools/call","params":{"name":"run_command","arguments":{"argv":["sleep","30"],"timeout_seconds":%s}}}`, i, secs))
			b := c.recv(30 * time.Second)
			took := time.Since(start)
			var r struct {
				Result struct {
					Content []struct{ Text string }
				}
			}
			if err := json.Unmarshal(b, &r); err != nil || len(r.Result.Content) != 1 {
				t.Fatalf("timeout_seconds %s: %.300q", secs, b)
			}
			out := r.Result.Content[0].Text
			if !strings.HasPrefix(out, "exit code: 124 (timed out after 1s") || !strings.Contains(out, "timeout_seconds "+secs+" is above the limit of 1s") || took > 10*time.Second {
				t.Errorf("timeout_seconds %s: after %s: %q", secs, took, out)
			}
		}
	})
}

// peakMemory describes the peak resident memory of process pid.
func peakMemory(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "peak memory unknown"
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return "server peak resident memory " + strings.TrimSpace(v)
		}
	}
	return "peak memory unknown"
}
