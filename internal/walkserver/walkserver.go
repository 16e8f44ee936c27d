// Package walkserver owns the walk server: a process of the user's that
// keeps the walks of one-shot runs (`cordon run`) watched between them, so
// that a later run in a large workspace costs no lstat per directory.
//
// A run walks its writable trees before the command (deny globs, git
// directories, protected names) and, when the command may have added a
// name, after it. Without a watcher each walk must lstat every directory
// to learn that it did not change; a session (one sandbox for many
// commands) keeps an inotify watcher in its own process instead
// (globscan.Cache.Watch), but a one-shot run lives for one command. The
// walk server is that watcher for them: it holds a watched
// globscan.Cache, and a run's cache (globscan.Cache.UseRemote) hands it
// its scans, which it answers taking every directory its watches vouch
// for without looking at it.
//
// Trust. The server listens on a socket in the walk cache's directory
// (the state directory, which no sandbox can see: masked under
// bubblewrap, outside Landlock's reads), and answers only a client that
// sends the token it wrote there (a file only the user can read, which a
// sandboxed process therefore cannot), runs as the same user, in the same
// mount namespace and with the same root directory (so that a path means
// the same directory to both). A client checks that the server runs as
// the same user. Whatever fails, the client walks itself, as without a
// server: the server may only make a walk cheaper, never change what it
// finds (the scan it runs is the client's, with the client's limits),
// but at or below the paths the client says it ignores: an earlier scan
// answers when only those changed since.
//
// Life. `cordon run` starts one (Start) after a run that walked at least
// StartFrom directories itself. It exits after Idle without a request,
// when its socket or token is removed or replaced (a fake home of a test
// removed), or when another server holds its lock; it writes nothing but
// its socket, token and lock.
//
// It must not decide what a walk looks for or what a finding means: that
// is the plan's and the planted check's.
package walkserver

import (
	"time"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// Files of the server in the walk cache's directory.
const (
	sockName  = "server.sock"
	tokenName = "server.token"
	lockName  = "server.lock"
)

// Idle is how long a server waits for a request before it exits.
const Idle = 10 * time.Minute

// StartFrom is the fewest directories a run must have walked itself for
// Start to be worth it: below, a walk costs less than the server's start.
const StartFrom = 2000

// version is the protocol's: a client and a server of other versions do
// not talk (the client walks itself, and the server exits, to be started
// again by the newer cordon).
const version = 3

// request is one scan a client asks for.
type request struct {
	Version  int
	Token    string
	Root     string
	Patterns []globscan.Pattern
	Limits   globscan.Limits
	// Ignore are the paths below root whose changes the client ignores
	// (globscan.Cache.ScanPatternsIgnoring).
	Ignore []string `json:",omitempty"`
}

// response is the scan's result, or why there is none (Refused: the
// client walks itself). Before it, the server sends a response with Ack
// alone as soon as it has taken the request, so that a client learns at
// once that the server is not stopped or stuck (see Client.Scan).
type response struct {
	Ack     bool `json:",omitempty"`
	Matches []globscan.Match
	Stats   globscan.Stats
	Limit   *globscan.LimitError `json:",omitempty"`
	Err     string               `json:",omitempty"`
	Refused string               `json:",omitempty"`
	// Declined, with Refused, says that the server runs on and declines
	// the tree (it does not keep it watched): the client's run starts no
	// other server, which would find this one holding the directory.
	Declined bool `json:",omitempty"`
}
