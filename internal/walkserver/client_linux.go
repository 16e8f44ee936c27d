package walkserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/globscan"
	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Client hands a run's scans to the walk server of a walk cache
// directory (see globscan.Cache.UseRemote). It is safe for concurrent
// use; after its first failure it refuses every scan (the caller walks
// itself).
type Client struct {
	dir, token string
	tokenID    fileID // the token file's, for forget

	mu     sync.Mutex
	conn   *net.UnixConn
	enc    *json.Encoder
	dec    *json.Decoder
	broken bool
	served int
}

// maxToken bounds the token file read.
const maxToken = 256

// Dial returns a client of the walk server of the walk cache directory
// dir, or nil when none runs there (no token: nothing is connected until
// the first scan). The token must be a regular file of this user that
// nobody else can read or write.
func Dial(dir string) *Client {
	f, err := os.OpenFile(filepath.Join(dir, tokenName), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 || st.Size > maxToken {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxToken))
	if err != nil || len(b) == 0 {
		return nil
	}
	return &Client{dir: dir, token: string(b), tokenID: fileID{st.Dev, st.Ino}}
}

// Served is the number of scans the server answered.
func (c *Client) Served() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served
}

// Scan asks the server for root's scan with patterns and lim, ignoring
// the changes at or below the paths of ignore within root
// (globscan.Cache.ScanPatternsIgnoring, which it runs), and returns its result
// with ok true; ok is false when the server could not answer (none, gone,
// refused, too slow, or a failure before), for the caller to walk itself.
func (c *Client) Scan(root string, patterns []globscan.Pattern, lim globscan.Limits, ignore []string) (r globscan.RemoteScan, ok bool) {
	if c == nil {
		return r, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken {
		return r, false
	}
	// Only those within root are of use to the server.
	var within []string
	for _, p := range ignore {
		if subpath.Within(p, root) {
			within = append(within, p)
		}
	}
	resp, rerr := c.ask(request{Version: version, Token: c.token, Root: root, Patterns: patterns, Limits: lim, Ignore: within}, lim)
	if errors.Is(rerr, errNoAck) {
		c.forget()
	}
	if rerr != nil || resp.Refused != "" {
		c.broken = true
		if c.conn != nil {
			c.conn.Close()
			c.conn = nil
		}
		// A server that runs on said no: starting another is no use.
		r.Declined = rerr == nil && resp.Declined
		return r, false
	}
	c.served++
	r.Matches, r.Stats = resp.Matches, resp.Stats
	switch {
	case resp.Limit != nil:
		r.Err = resp.Limit
	case resp.Err != "":
		r.Err = errors.New(resp.Err)
	}
	return r, true
}

// errNoAck is ask's error when the server did not take the request in
// time: it is stopped (SIGSTOP) or stuck.
var errNoAck = errors.New("the walk server did not take the request in time")

// maxAckWait bounds the wait for the server's ack, a quarter of the scan's
// deadline below 4 s: a server that is stopped or stuck costs the caller
// that much of its bound (the planted check's, 3 s, covers its walks and
// the git directories it finds), not the scan's whole deadline.
const maxAckWait = time.Second

// forget removes the server's token when it is still the one c read,
// after the server did not take a request in time: the next runs walk
// themselves at once instead of waiting for it in turn, and the server,
// when it runs again, exits (its token is gone).
func (c *Client) forget() {
	p := filepath.Join(c.dir, tokenName)
	if id, err := lstatID(p); err == nil && id == c.tokenID {
		_ = os.Remove(p)
	}
}

// ask sends req and reads the server's ack, within a quarter of the
// scan's deadline and at most maxAckWait, then the response, within the
// longest a scan with lim may take (its deadline, which a starved
// machine stretches up to four times) and a second.
func (c *Client) ask(req request, lim globscan.Limits) (response, error) {
	if c.conn == nil {
		conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: filepath.Join(c.dir, sockName), Net: "unix"})
		if err != nil {
			return response{}, err
		}
		cred, err := peerCred(conn)
		if err != nil || int(cred.Uid) != os.Geteuid() {
			conn.Close()
			return response{}, errors.New("the walk server runs as another user")
		}
		c.conn, c.enc, c.dec = conn, json.NewEncoder(conn), json.NewDecoder(conn)
	}
	wait := lim.Deadline
	if wait <= 0 {
		wait = globscan.DefaultDeadline
	}
	if err := c.conn.SetDeadline(time.Now().Add(min(wait/4, maxAckWait))); err != nil {
		return response{}, err
	}
	if err := c.enc.Encode(req); err != nil {
		return response{}, err
	}
	var ack response
	if err := c.dec.Decode(&ack); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return response{}, errNoAck
		}
		return response{}, err
	}
	if ack.Refused != "" {
		return ack, nil
	}
	if !ack.Ack {
		return response{}, errors.New("the walk server answered without taking the request first")
	}
	if err := c.conn.SetDeadline(time.Now().Add(4*wait + time.Second)); err != nil {
		return response{}, err
	}
	var resp response
	if err := c.dec.Decode(&resp); err != nil {
		return response{}, err
	}
	if resp.Ack {
		return response{}, errors.New("the walk server took the request twice")
	}
	return resp, nil
}

// Close closes the client's connection.
func (c *Client) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broken = true
	if c.conn != nil {
		err := c.conn.Close()
		c.conn = nil
		return err
	}
	return nil
}

// Start starts the walk server of the walk cache directory dir: the
// program exe with args (which must run Serve for dir), in a session of
// its own, its standard streams on /dev/null, no descriptor of the caller
// and only PATH of its environment, not waited for. A server already
// running there makes the new one exit at once.
func Start(dir, exe string, args ...string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// A descriptor the caller inherited open (a pipe of the agent that
	// waits for its end, say) must not live on in the server: every one
	// above the standard streams is closed on exec from now on (the
	// caller is about to exit).
	if err := unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		if err := cloexecAll(); err != nil {
			return err
		}
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	// Not waited for: it outlives the caller, and init reaps it.
	return cmd.Process.Release()
}

// cloexecAll marks every open descriptor above the standard streams
// close-on-exec, where close_range(2) cannot (Linux before 5.11).
func cloexecAll() error {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the open descriptors: %w", err)
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
	return nil
}
