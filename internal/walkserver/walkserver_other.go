//go:build !linux

package walkserver

import (
	"errors"
	"time"

	"github.com/cordon-sandbox/cordon/internal/globscan"
)

// errNotBuilt: the walk server watches with inotify, which only Linux has.
var errNotBuilt = errors.New("the walk server is built for Linux only")

// Client: none here (Dial returns nil).
type Client struct{}

// Dial: no server here.
func Dial(string) *Client { return nil }

// Served: none.
func (*Client) Served() int { return 0 }

// Scan: never answered here.
func (*Client) Scan(string, []globscan.Pattern, globscan.Limits, []string) (globscan.RemoteScan, bool) {
	return globscan.RemoteScan{}, false
}

// Close: nothing to close.
func (*Client) Close() error { return nil }

// Serve: not built here.
func Serve(string, time.Duration) error { return errNotBuilt }

// Start: not built here.
func Start(string, string, ...string) error { return errNotBuilt }
