// Command benchnet measures cordon's network proxy (package netproxy) on
// loopback, in one run, against the same work done directly:
//
//   - a download (256 MiB by default) from a TCP server on 127.0.0.1,
//     direct, through an HTTP CONNECT tunnel and through a SOCKS5 tunnel,
//     and, for information, as a plain http:// GET direct and forwarded
//     by the HTTP proxy; the runs are interleaved and the medians'
//     throughput ratios printed (target: tunnels >= 90% of direct). The
//     floor of any relay is printed beside them: the same download
//     through a bare relay (io.Copy between the two *net.TCPConn, which
//     splices, as the proxy's tunnels do, with no handshake and no rule):
//     on loopback, a relay is a third party on the machine's cores that
//     the direct download does not have; and through the same relay
//     copying with read and write through a 1 MiB buffer instead of
//     splice, to compare the two ways;
//   - the latency added per new connection: the median time from dialing
//     to the first echoed byte, through each proxy, minus the same direct
//     (target: <= 0.5 ms);
//   - 200 connections open at once through one proxy, each echoing
//     64 KiB, through each proxy: the errors are counted (target: none);
//   - the swap of a credential (credential.go): HTTPS downloads from a
//     host whose TLS the proxy intercepts against one it tunnels, from a
//     server limited to 100 MiB/s (target: >= 90%) and unlimited, with
//     the CPU time per MiB, and the added time of a first request on a
//     new connection (target: <= 2 ms at the median).
//
// The proxy runs in this process with the rules "127.0.0.1:PORT" of the
// servers, the default dialer, and a recorder that counts the decisions.
// Nothing leaves 127.0.0.1. Run it with:
//
//	go run ./internal/bench/net [-mib 256] [-runs 5] [-n 2000] [-conns 200] [-cred-mib 256] [-cred-n 500] [-only tunnels|credentials]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/proxy"

	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

func main() {
	mib := flag.Int("mib", 256, "download size in MiB")
	runs := flag.Int("runs", 5, "downloads of each kind")
	n := flag.Int("n", 2000, "new connections timed through each path")
	conns := flag.Int("conns", 200, "connections open at once through each proxy")
	credMiB := flag.Int("cred-mib", 256, "HTTPS download size in MiB of the credential benchmarks")
	credN := flag.Int("cred-n", 500, "first requests timed to each host in the credential benchmarks")
	only := flag.String("only", "", `"tunnels" or "credentials": run only those benchmarks`)
	flag.Parse()
	if *only != "credentials" {
		if err := run(*mib, *runs, *n, *conns); err != nil {
			fmt.Fprintln(os.Stderr, "benchnet:", err)
			os.Exit(1)
		}
	}
	if *only != "tunnels" {
		if err := runCredential(*credMiB, *runs, *credN); err != nil {
			fmt.Fprintln(os.Stderr, "benchnet: credentials:", err)
			os.Exit(1)
		}
	}
}

// bench is the servers and the proxy of one run.
type bench struct {
	download, echo, web   string // servers' addresses
	httpProxy, socksProxy string
	relayDownload         string // a bare relay to download
	relayEcho             string // a bare relay to echo
	copyDownload          string // a bare relay to download, copying
	size                  int64
	socks                 proxy.ContextDialer
	decisions             atomic.Int64
}

func run(mib, runs, n, conns int) error {
	b := &bench{size: int64(mib) << 20}
	dl, err := serve(b.serveDownload)
	if err != nil {
		return err
	}
	echo, err := serve(serveEcho)
	if err != nil {
		return err
	}
	wl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	web := &http.Server{Handler: http.HandlerFunc(b.serveWeb), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = web.Serve(wl) }()
	defer web.Close()
	b.download, b.echo, b.web = dl.Addr().String(), echo.Addr().String(), wl.Addr().String()

	rules, err := netrule.Compile([]string{b.download, b.echo, b.web}, nil)
	if err != nil {
		return err
	}
	srv := netproxy.New(netproxy.Config{Rules: rules, Record: func(netproxy.Event) { b.decisions.Add(1) }})
	defer srv.Close()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.ServeHTTP(hl) }()
	go func() { _ = srv.ServeSOCKS5(sl) }()
	b.httpProxy, b.socksProxy = hl.Addr().String(), sl.Addr().String()
	d, err := proxy.SOCKS5("tcp", b.socksProxy, nil, &net.Dialer{})
	if err != nil {
		return err
	}
	b.socks = d.(proxy.ContextDialer)
	if b.relayDownload, err = relay(b.download, false); err != nil {
		return err
	}
	if b.relayEcho, err = relay(b.echo, false); err != nil {
		return err
	}
	if b.copyDownload, err = relay(b.download, true); err != nil {
		return err
	}

	fmt.Printf("benchnet: %d MiB downloads x %d, %d new connections per path, %d at once; GOMAXPROCS %d\n",
		mib, runs, n, conns, runtimeProcs())
	if err := b.throughput(runs); err != nil {
		return err
	}
	if err := b.latency(n); err != nil {
		return err
	}
	if err := b.concurrent(conns); err != nil {
		return err
	}
	fmt.Printf("decisions recorded: %d; refusals: %d\n", b.decisions.Load(), len(srv.Refusals()))
	return nil
}

// path is one way to reach a server: direct or through a proxy.
type path struct {
	name string
	dial func(target string) (net.Conn, error)
}

// paths are direct, through each proxy, and through the bare relay.
func (b *bench) paths() []path {
	return []path{
		{"direct", func(t string) (net.Conn, error) { return net.Dial("tcp", t) }},
		{"HTTP CONNECT", func(t string) (net.Conn, error) { return connect(b.httpProxy, t) }},
		{"SOCKS5", func(t string) (net.Conn, error) { return b.socks.DialContext(context.Background(), "tcp", t) }},
		{"bare relay", func(t string) (net.Conn, error) {
			if t == b.echo {
				return net.Dial("tcp", b.relayEcho)
			}
			return net.Dial("tcp", b.relayDownload)
		}},
	}
}

// throughput times the downloads, interleaved, and prints the medians.
func (b *bench) throughput(runs int) error {
	paths := b.paths()
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	forwarded := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(mustURL("http://" + b.httpProxy)), DisableKeepAlives: true}}
	names := []string{"direct", "HTTP CONNECT", "SOCKS5", "bare relay", "http GET direct", "http GET forwarded", "bare relay, copying"}
	rates := make([][]float64, len(names))
	for r := 0; r < runs+1; r++ { // the first round warms up
		for i, name := range names {
			var took time.Duration
			var err error
			switch {
			case i < len(paths):
				took, err = b.fetch(paths[i].dial)
			case name == "http GET direct":
				took, err = b.get(direct)
			case name == "bare relay, copying":
				took, err = b.fetch(func(string) (net.Conn, error) { return net.Dial("tcp", b.copyDownload) })
			default:
				took, err = b.get(forwarded)
			}
			if err != nil {
				return fmt.Errorf("%s download: %w", name, err)
			}
			if r > 0 {
				rates[i] = append(rates[i], float64(b.size)/(1<<20)/took.Seconds())
			}
		}
	}
	med := make([]float64, len(names))
	for i, name := range names {
		slices.Sort(rates[i])
		med[i] = rates[i][len(rates[i])/2]
		fmt.Printf("download %-20s median %7.0f MiB/s (min %.0f, max %.0f)\n", name, med[i], rates[i][0], rates[i][len(rates[i])-1])
	}
	fmt.Printf("throughput HTTP CONNECT / direct: %5.1f%% (target >= 90%%); / bare relay: %5.1f%%\n", 100*med[1]/med[0], 100*med[1]/med[3])
	fmt.Printf("throughput SOCKS5 / direct:       %5.1f%% (target >= 90%%); / bare relay: %5.1f%%\n", 100*med[2]/med[0], 100*med[2]/med[3])
	fmt.Printf("throughput bare relay / direct:   %5.1f%% (the floor of any relay on this machine); copying: %5.1f%%\n", 100*med[3]/med[0], 100*med[6]/med[0])
	fmt.Printf("throughput http forwarded / http direct: %5.1f%% (no target: a plain http:// request is copied by net/http, not spliced)\n", 100*med[5]/med[4])
	return nil
}

// fetch downloads b.size bytes from the download server through dial.
func (b *bench) fetch(dial func(string) (net.Conn, error)) (time.Duration, error) {
	start := time.Now()
	c, err := dial(b.download)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := c.Write([]byte{'G'}); err != nil {
		return 0, err
	}
	got, err := drain(c)
	if err != nil {
		return 0, err
	}
	if got != b.size {
		return 0, fmt.Errorf("got %d bytes, want %d", got, b.size)
	}
	return time.Since(start), nil
}

// get downloads b.size bytes from the web server with c.
func (b *bench) get(c *http.Client) (time.Duration, error) {
	start := time.Now()
	resp, err := c.Get("http://" + b.web + "/")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	got, err := drain(resp.Body)
	if err != nil {
		return 0, err
	}
	if got != b.size {
		return 0, fmt.Errorf("got %d bytes, want %d", got, b.size)
	}
	return time.Since(start), nil
}

// drain reads r to its end with a large buffer.
func drain(r io.Reader) (int64, error) {
	buf := make([]byte, 1<<20)
	var n int64
	for {
		m, err := r.Read(buf)
		n += int64(m)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// latency times new connections (dial, one byte out, its echo back)
// through each path, interleaved, and prints the medians.
func (b *bench) latency(n int) error {
	paths := b.paths()
	times := make([][]time.Duration, len(paths))
	one := []byte{'x'}
	for i := 0; i < n+50; i++ {
		for p, pt := range paths {
			start := time.Now()
			c, err := pt.dial(b.echo)
			if err != nil {
				return fmt.Errorf("%s: %w", pt.name, err)
			}
			_, err = c.Write(one)
			if err == nil {
				_, err = io.ReadFull(c, make([]byte, 1))
			}
			took := time.Since(start)
			c.Close()
			if err != nil {
				return fmt.Errorf("%s echo: %w", pt.name, err)
			}
			if i >= 50 { // warm-up
				times[p] = append(times[p], took)
			}
		}
	}
	med := make([]time.Duration, len(paths))
	for p, pt := range paths {
		slices.Sort(times[p])
		med[p] = times[p][len(times[p])/2]
		fmt.Printf("new connection %-13s median %6.3f ms (p10 %.3f, p90 %.3f)\n", pt.name, ms(med[p]), ms(times[p][len(times[p])/10]), ms(times[p][len(times[p])*9/10]))
	}
	for p := 1; p < 3; p++ {
		fmt.Printf("added latency per new connection, %-13s %6.3f ms (target <= 0.5 ms)\n", paths[p].name+":", ms(med[p]-med[0]))
	}
	return nil
}

// concurrent opens conns connections at once through each proxy, then
// echoes 64 KiB on each, and counts the errors.
func (b *bench) concurrent(conns int) error {
	for _, pt := range b.paths()[1:3] {
		var opened, wg sync.WaitGroup
		var failed atomic.Int64
		var firstErr error
		var mu sync.Mutex
		fail := func(err error) {
			failed.Add(1)
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
		}
		start := make(chan struct{})
		opened.Add(conns)
		began := time.Now()
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := pt.dial(b.echo)
				opened.Done()
				if err != nil {
					fail(err)
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(time.Minute))
				<-start
				msg := make([]byte, 64<<10)
				for i := range msg {
					msg[i] = byte('a' + i%26)
				}
				go func() { _, _ = c.Write(msg) }()
				got := make([]byte, len(msg))
				if _, err := io.ReadFull(c, got); err != nil {
					fail(err)
				} else if string(got) != string(msg) {
					fail(errors.New("echo differs"))
				}
			}()
		}
		opened.Wait()
		close(start)
		wg.Wait()
		fmt.Printf("%d connections at once through %-13s %d errors, %.0f ms\n", conns, pt.name+":", failed.Load(), ms(time.Since(began)))
		if firstErr != nil {
			fmt.Printf("  first error: %v\n", firstErr)
		}
	}
	return nil
}

// connect opens a CONNECT tunnel through the HTTP proxy at proxyAddr.
func connect(proxyAddr, target string) (net.Conn, error) {
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || br.Buffered() > 0 {
		c.Close()
		return nil, fmt.Errorf("CONNECT %s: %s", target, resp.Status)
	}
	return c, nil
}

// relay is the bare relay to target: every connection is joined to a new
// connection to target by io.Copy both ways (splice between the
// *net.TCPConn, or, with copying, read and write through a 1 MiB
// buffer), half-closing as it ends.
func relay(target string, copying bool) (string, error) {
	l, err := serve(func(c *net.TCPConn) {
		u, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		up := u.(*net.TCPConn)
		defer up.Close()
		cp := func(dst, src *net.TCPConn) {
			if copying {
				_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 1<<20))
			} else {
				_, _ = io.Copy(dst, src)
			}
			_ = dst.CloseWrite()
		}
		done := make(chan struct{})
		go func() {
			cp(c, up)
			close(done)
		}()
		cp(up, c)
		<-done
	})
	if err != nil {
		return "", err
	}
	return l.Addr().String(), nil
}

// serve accepts on 127.0.0.1 and runs handle on each connection.
func serve(handle func(*net.TCPConn)) (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c.(*net.TCPConn))
			}()
		}
	}()
	return l, nil
}

// serveDownload waits for one byte, then sends b.size bytes and closes.
func (b *bench) serveDownload(c *net.TCPConn) {
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		return
	}
	buf := make([]byte, 1<<20)
	for left := b.size; left > 0; {
		m, err := c.Write(buf[:min(left, int64(len(buf)))])
		left -= int64(m)
		if err != nil {
			return
		}
	}
}

// serveWeb answers a GET with b.size bytes.
func (b *bench) serveWeb(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Length", strconv.FormatInt(b.size, 10))
	buf := make([]byte, 1<<20)
	for left := b.size; left > 0; {
		m, err := w.Write(buf[:min(left, int64(len(buf)))])
		left -= int64(m)
		if err != nil {
			return
		}
	}
}

// serveEcho echoes until the client ends.
func serveEcho(c *net.TCPConn) {
	_, _ = io.Copy(c, c)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

func mustURL(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	return u
}
