package netproxy

import (
	"bufio"
	"bytes"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"
)

// hostsFile answers names from the host's hosts file, as the host's own
// tools do before DNS. The proxy looks names up in DNS as absolute names
// (so that no search domain changes them), and Go's resolver consults the
// hosts file only for names without the trailing dot: without this, a
// name the user defined in /etc/hosts (a docker-compose service, a
// development alias) would go to DNS and fail.
type hostsFile struct {
	path string

	mu     sync.Mutex
	mtime  time.Time
	size   int64
	byName map[string][]netip.Addr
}

// maxHostsFile bounds the hosts file read (a sanity check).
const maxHostsFile = 4 << 20

// lookup returns the addresses the hosts file gives name (canonical: lower
// case, no trailing dot), re-reading the file when it changed; nil when
// it names none or cannot be read.
func (h *hostsFile) lookup(name string) []netip.Addr {
	h.mu.Lock()
	defer h.mu.Unlock()
	fi, err := os.Stat(h.path)
	if err != nil || fi.Size() > maxHostsFile {
		h.byName = nil
		return nil
	}
	if h.byName == nil || !fi.ModTime().Equal(h.mtime) || fi.Size() != h.size {
		data, err := os.ReadFile(h.path)
		if err != nil {
			return nil
		}
		h.byName = parseHosts(data)
		h.mtime, h.size = fi.ModTime(), fi.Size()
	}
	return h.byName[name]
}

// parseHosts reads hosts(5) lines: an address, then names, "#" starting a
// comment. Names are lower-cased and lose a trailing dot; an address with
// a zone is skipped (the proxy dials no link-local zone).
func parseHosts(data []byte) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil || a.Zone() != "" {
			continue
		}
		a = a.Unmap()
		for _, n := range f[1:] {
			n = strings.TrimSuffix(strings.ToLower(n), ".")
			out[n] = append(out[n], a)
		}
	}
	return out
}
