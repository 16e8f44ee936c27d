package walkserver

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/internal/filelock"
	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// checkEvery is how often a server looks whether it is idle and whether
// its socket and token are still its own.
var checkEvery = 2 * time.Second

// watchMax is the most watches a server's cache adds (0: its default
// share of the system's; a variable for the tests).
var watchMax = 0

// settleStarted, when not nil, is called as a server repeats a scan (see
// settle), for the tests.
var settleStarted func()

// requestWait is how long a connection may wait for its next request.
var requestWait = 30 * time.Second

// Bounds on what clients, with or without the token, make the server
// hold: a request is read whole before its token is checked, so a
// command that reaches the socket (the Landlock-only backend does not
// govern connect) could otherwise make it allocate without end.
const (
	// maxRequest bounds the bytes read for one request (a run's are
	// about 4 KB: a root and its patterns).
	maxRequest = 1 << 20
	// maxConns bounds the connections served at once; one more is
	// closed at once (its client walks itself).
	maxConns = 64
)

// server is one Serve.
type server struct {
	token string
	cache *globscan.Cache
	// mntNS and root identify the server's mount namespace and root
	// directory, which a client must share.
	mntNS, root fileID
	last        atomic.Int64 // the last request's time, Unix nanoseconds
	conns       atomic.Int32 // the connections being served
	requestWait time.Duration
	done        chan struct{}
	doneOnce    sync.Once
	// settling are the scans being repeated after a reply (see settle).
	settleMu sync.Mutex
	settling map[string]bool
}

// fileID identifies a file: its device and inode number.
type fileID struct{ dev, ino uint64 }

func statID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

func lstatID(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{st.Dev, st.Ino}, nil
}

// Serve runs the walk server of the walk cache directory dir (which must
// exist) until it has had no request for idle, its socket or token is
// removed or replaced, or a client of another version came. It returns
// nil at once when another server holds dir's lock.
func Serve(dir string, idle time.Duration) error {
	release, err := filelock.Lock(filepath.Join(dir, lockName), time.Millisecond)
	if errors.Is(err, filelock.ErrTimeout) {
		return nil // another server serves dir
	}
	if err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	defer release()
	s := &server{requestWait: requestWait, done: make(chan struct{}), settling: map[string]bool{}}
	if s.mntNS, err = statID("/proc/self/ns/mnt"); err != nil {
		return fmt.Errorf("walk server: its mount namespace: %w", err)
	}
	if s.root, err = statID("/"); err != nil {
		return fmt.Errorf("walk server: its root: %w", err)
	}
	s.cache = globscan.OpenCache(dir)
	if err := s.cache.Watch(watchMax); err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	defer s.cache.Close()

	sock := filepath.Join(dir, sockName)
	_ = os.Remove(sock) // a server's that died: the lock is ours
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	l.SetUnlinkOnClose(false)
	defer l.Close()
	if err := os.Chmod(sock, 0o600); err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	sockID, err := lstatID(sock)
	if err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	tokenPath := filepath.Join(dir, tokenName)
	tokenID, err := s.writeToken(tokenPath)
	if err != nil {
		return fmt.Errorf("walk server: %w", err)
	}
	defer func() {
		// Only its own: another server may have taken dir since.
		if id, err := lstatID(tokenPath); err == nil && id == tokenID {
			os.Remove(tokenPath)
		}
		if id, err := lstatID(sock); err == nil && id == sockID {
			os.Remove(sock)
		}
	}()
	s.last.Store(time.Now().UnixNano())
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				s.stop()
				return
			}
			if s.conns.Add(1) > maxConns {
				s.conns.Add(-1)
				c.Close()
				continue
			}
			go func() {
				defer s.conns.Add(-1)
				s.handle(c)
			}()
		}
	}()
	// Ended by a signal, it removes its socket and token all the same.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sig)
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.done:
			return nil
		case <-sig:
			return nil
		case <-tick.C:
		}
		if time.Since(time.Unix(0, s.last.Load())) > idle {
			return nil
		}
		if id, err := lstatID(sock); err != nil || id != sockID {
			return nil
		}
		if id, err := lstatID(tokenPath); err != nil || id != tokenID {
			return nil
		}
	}
}

// stop makes Serve return.
func (s *server) stop() { s.doneOnce.Do(func() { close(s.done) }) }

// writeToken writes a new random token to path (mode 0600, by rename:
// a client reads a whole one or none) and returns the file's identity.
func (s *server) writeToken(path string) (fileID, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fileID{}, err
	}
	s.token = hex.EncodeToString(b[:])
	f, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return fileID{}, err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fileID{}, err
	}
	if _, err := f.WriteString(s.token); err != nil {
		f.Close()
		return fileID{}, err
	}
	if err := f.Close(); err != nil {
		return fileID{}, err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fileID{}, err
	}
	return lstatID(path)
}

// peerRefused says why the client on c may not be served ("" when it
// may): it must run as this user, in this mount namespace, with this
// root directory.
func (s *server) peerRefused(c *net.UnixConn) string {
	cred, err := peerCred(c)
	if err != nil {
		return fmt.Sprintf("its credentials could not be read (%v)", err)
	}
	if int(cred.Uid) != os.Geteuid() {
		return "it runs as another user"
	}
	if cred.Pid <= 0 {
		return "its process is not visible here"
	}
	proc := fmt.Sprintf("/proc/%d/", cred.Pid)
	if id, err := statID(proc + "ns/mnt"); err != nil || id != s.mntNS {
		return "it runs in another mount namespace"
	}
	if id, err := statID(proc + "root"); err != nil || id != s.root {
		return "it has another root directory"
	}
	return ""
}

// peerCred is the credentials of the process at the other end of c.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}

// handle serves the client on c, one scan after another, until it closes.
func (s *server) handle(c *net.UnixConn) {
	defer c.Close()
	in := &boundedReader{r: c}
	enc, dec := json.NewEncoder(c), json.NewDecoder(in)
	if why := s.peerRefused(c); why != "" {
		_ = enc.Encode(response{Refused: "the walk server serves no such client: " + why})
		return
	}
	for {
		// A client that sends nothing (one that reached the socket
		// without the token, say) holds no descriptor for long.
		if err := c.SetReadDeadline(time.Now().Add(s.requestWait)); err != nil {
			return
		}
		in.left = maxRequest
		var req request
		if err := dec.Decode(&req); err != nil {
			return
		}
		// The token first: a client without it (a sandboxed command
		// that reached the socket) must not stop the server by
		// claiming another version.
		if subtle.ConstantTimeCompare([]byte(req.Token), []byte(s.token)) != 1 {
			_ = enc.Encode(response{Refused: "the walk server's token does not match"})
			return
		}
		if req.Version != version {
			// A newer (or older) cordon: it starts a server of its own
			// once this one is gone.
			_ = enc.Encode(response{Refused: fmt.Sprintf("the walk server speaks version %d, not %d", version, req.Version)})
			s.stop()
			return
		}
		if !filepath.IsAbs(req.Root) || filepath.Clean(req.Root) != req.Root {
			_ = enc.Encode(response{Refused: "the root to walk is not a clean absolute path"})
			return
		}
		if !s.cache.Watched(req.Root, req.Patterns) {
			// Its latest scan had more directories than the watcher's
			// share of the system's watches (or they ran out): the
			// server would lstat every directory as the client does,
			// and send it all over the socket besides. Not counted as
			// a request: a server that serves nothing exits when idle,
			// and a later run starts one that looks again.
			_ = enc.Encode(response{Refused: "the walk server cannot watch this tree (more directories than its inotify watches)", Declined: true})
			return
		}
		s.last.Store(time.Now().UnixNano())
		if err := enc.Encode(response{Ack: true}); err != nil {
			return
		}
		matches, st, err := s.cache.ScanPatternsIgnoring(req.Root, req.Patterns, req.Limits, req.Ignore)
		resp := response{Matches: matches, Stats: st}
		var le *globscan.LimitError
		switch {
		case errors.As(err, &le):
			resp.Limit = le
		case err != nil:
			resp.Err = err.Error()
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
		// Repeated, a scan whose new directories the watcher cannot
		// take (more than its share of the system's watches) would walk
		// the whole tree again at every request, and hold up the next
		// client's scan meanwhile, for nothing.
		if err == nil && st.Vouched < st.Dirs*9/10 && s.cache.Watched(req.Root, req.Patterns) {
			s.settle(req)
		}
	}
}

// settle scans req's tree again once, after a reply whose scan took less
// than nine directories in ten on the watcher's word (a first scan, many
// new directories): those it watched only once it began, and a scan can
// vouch only for the directories of a scan that began after their watch
// was added. Repeated now, while the client runs its command, the next
// client's scan takes them on the watcher's word. (A few directories new
// at each run, a placeholder's, are not worth a scan each time.)
func (s *server) settle(req request) {
	key := req.Root + "\x00" + fmt.Sprint(req.Patterns)
	s.settleMu.Lock()
	if s.settling[key] {
		s.settleMu.Unlock()
		return
	}
	s.settling[key] = true
	s.settleMu.Unlock()
	if settleStarted != nil {
		settleStarted()
	}
	go func() {
		defer func() {
			s.settleMu.Lock()
			delete(s.settling, key)
			s.settleMu.Unlock()
		}()
		_, _, _ = s.cache.ScanPatterns(req.Root, req.Patterns, req.Limits)
	}()
}

// boundedReader reads from r until left bytes were read, then fails.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errors.New("the request is larger than the walk server reads")
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
