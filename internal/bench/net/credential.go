package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/net/netproxy"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
)

// This file measures the swap of a credential (netproxy's interception):
// HTTPS downloads from a host a credential belongs to, whose TLS ends at
// the proxy, against the same from a host whose tunnel stays end to end,
// interleaved, (a) from a server limited to 100 MiB/s (a fast real link)
// and (b) unlimited on loopback; the CPU time per MiB of each (client,
// proxy and server all run in this process: the difference is the
// proxy's cost); and the time to the first response on a new connection.

const (
	boundHost  = "bound.bench"
	tunnelHost = "tunnel.bench"
	// limitRate is the rate-limited server's rate: 100 MiB/s.
	limitRate = 100 << 20
	// benchPlaceholder and benchSecret are the credential of the run.
	benchPlaceholder = "ghp_BENCHplaceholderBENCHplaceholder0123"
	benchSecret      = "ghp_BENCHsecretBENCHsecretBENCHsecret0123"
)

// benchNames resolves the two hosts to the loopback.
type benchNames struct{}

func (benchNames) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// credBench is the HTTPS server and the intercepting proxy.
type credBench struct {
	port   int
	size   int64
	client *http.Client // through the proxy, verifying both CAs
}

// credential runs the credential benchmarks.
func runCredential(mib, runs, n int) error {
	cb := &credBench{size: int64(mib) << 20}
	serverCA, err := credential.NewCA([]string{boundHost, tunnelHost})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	block := make([]byte, 1<<20)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer "+benchPlaceholder && r.Host == boundHost+":"+strconv.Itoa(cb.port) {
				http.Error(w, "the placeholder reached the bound host", http.StatusUnauthorized)
				return
			}
			size := cb.size
			if r.URL.Path == "/small" {
				size = 1
			}
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			start := time.Now()
			for sent := int64(0); sent < size; {
				k := min(int64(len(block)), size-sent)
				if _, err := w.Write(block[:k]); err != nil {
					return
				}
				sent += k
				if r.URL.Query().Get("limit") != "" {
					// Keep to limitRate: sleep until this many bytes are due.
					if due := time.Duration(float64(sent) / limitRate * float64(time.Second)); due > time.Since(start) {
						time.Sleep(due - time.Since(start))
					}
				}
			}
		}),
		TLSConfig: &tls.Config{GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) { return serverCA.Leaf(hi.ServerName) }},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go func() { _ = srv.ServeTLS(l, "", "") }()
	defer srv.Close()
	cb.port = l.Addr().(*net.TCPAddr).Port

	runCA, err := credential.NewCA([]string{boundHost})
	if err != nil {
		return err
	}
	p := strconv.Itoa(cb.port)
	rules, err := netrule.Compile([]string{boundHost + ":" + p, tunnelHost + ":" + p, "127.0.0.1:" + p}, nil)
	if err != nil {
		return err
	}
	hosts, err := netrule.Compile([]string{boundHost}, nil)
	if err != nil {
		return err
	}
	upstream := x509.NewCertPool()
	upstream.AddCert(serverCA.Certificate())
	px := netproxy.New(netproxy.Config{
		Rules: rules, Resolver: benchNames{},
		Credentials:   []*credential.Binding{{Name: "bench", Hosts: hosts, Placeholder: benchPlaceholder, Secret: benchSecret}},
		CA:            runCA,
		UpstreamRoots: upstream,
	})
	defer px.Close()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = px.ServeHTTP(pl) }()
	trust := x509.NewCertPool()
	trust.AddCert(serverCA.Certificate())
	trust.AddCert(runCA.Certificate())
	cb.client = &http.Client{Transport: &http.Transport{
		Proxy:             http.ProxyURL(mustURL("http://" + pl.Addr().String())),
		TLSClientConfig:   &tls.Config{RootCAs: trust},
		DisableKeepAlives: true,
	}}

	fmt.Printf("credentials: HTTPS %d MiB downloads x %d, intercepted (%s, the secret swapped in) and tunnelled (%s), interleaved; %d first requests\n", mib, runs, boundHost, tunnelHost, n)
	for _, limited := range []bool{true, false} {
		if err := cb.throughput(runs, limited); err != nil {
			return err
		}
	}
	return cb.firstRequest(n)
}

// get does one request for path through the proxy to host on a new
// connection and reads the whole answer.
func (cb *credBench) get(host, path string) error {
	req, err := http.NewRequest(http.MethodGet, "https://"+host+":"+strconv.Itoa(cb.port)+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchPlaceholder)
	resp, err := cb.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", host, resp.Status)
	}
	return nil
}

// throughput downloads from both hosts in turn and prints the medians,
// their ratio and the CPU time per MiB of each.
func (cb *credBench) throughput(runs int, limited bool) error {
	path, what := "/dl", "unlimited"
	if limited {
		path, what = "/dl?limit=1", "server limited to 100 MiB/s"
	}
	hosts := []string{boundHost, tunnelHost}
	rates := make([][]float64, 2)
	cpu := make([]time.Duration, 2)
	for r := 0; r < runs+1; r++ { // the first round warms up
		for i, h := range hosts {
			c0, t0 := cpuTime(), time.Now()
			if err := cb.get(h, path); err != nil {
				return fmt.Errorf("download from %s: %w", h, err)
			}
			took, used := time.Since(t0), cpuTime()-c0
			if r > 0 {
				rates[i] = append(rates[i], float64(cb.size)/(1<<20)/took.Seconds())
				cpu[i] += used
			}
		}
	}
	med := make([]float64, 2)
	for i, h := range []string{"intercepted", "tunnelled"} {
		slices.Sort(rates[i])
		med[i] = rates[i][len(rates[i])/2]
		perMiB := float64(cpu[i].Microseconds()) / float64(runs) / (float64(cb.size) / (1 << 20))
		fmt.Printf("  %s, %-11s median %6.0f MiB/s (min %.0f, max %.0f); CPU %.0f us/MiB (client, proxy and server)\n", what, h, med[i], rates[i][0], rates[i][len(rates[i])-1], perMiB)
	}
	target := ""
	if limited {
		target = " (target >= 90%)"
	}
	fmt.Printf("  %s: intercepted / tunnelled %5.1f%%%s\n", what, 100*med[0]/med[1], target)
	return nil
}

// firstRequest times n requests for one byte on new connections to each
// host, interleaved, and prints the medians and their difference.
func (cb *credBench) firstRequest(n int) error {
	took := make([][]time.Duration, 2)
	for r := 0; r < n+n/10; r++ {
		for i, h := range []string{boundHost, tunnelHost} {
			t0 := time.Now()
			if err := cb.get(h, "/small"); err != nil {
				return err
			}
			if r >= n/10 { // the first tenth warms up
				took[i] = append(took[i], time.Since(t0))
			}
		}
	}
	for i := range took {
		slices.Sort(took[i])
	}
	a, b := took[0][len(took[0])/2], took[1][len(took[1])/2]
	fmt.Printf("  first request on a new connection: intercepted median %s, tunnelled %s: %s more (target <= 2 ms)\n",
		a.Round(time.Microsecond), b.Round(time.Microsecond), (a - b).Round(time.Microsecond))
	return nil
}
