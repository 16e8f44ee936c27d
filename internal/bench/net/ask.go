//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cordon-sandbox/cordon/internal/bench/benchpty"
)

// runAsk is -cordon BIN -base BIN: whole cordon runs of a command that
// makes reqs requests, one connection each, through the filtering proxy
// to an allowed host (a web server on 127.0.0.1 that --allow-net names),
// interleaved, in three variants: the base binary (main's) without
// --ask, BIN without --ask, and BIN with --ask, each run on a
// pseudo-terminal (--ask asks only there). Nothing is asked: the host is
// allowed. It prints each variant's median and the ratios to the base.
func runAsk(cordon, base string, reqs, runs int) error {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	ws, err := os.MkdirTemp("", "benchnet-ws-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	if ws, err = filepath.EvalSymlinks(ws); err != nil {
		return err
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/"
	// --noproxy '' sends 127.0.0.1 through the proxy despite NO_PROXY.
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do curl --noproxy '' -fsS -o /dev/null %s || exit 1; i=$((i+1)); done", reqs, url)
	allow := "127.0.0.1:" + strconv.Itoa(port)
	variants := []struct {
		name string
		argv []string
	}{
		{"main", []string{base, "run", "--allow-net", allow, "--", "sh", "-c", script}},
		{"branch", []string{cordon, "run", "--allow-net", allow, "--", "sh", "-c", script}},
		{"branch --ask", []string{cordon, "run", "--ask", "--allow-net", allow, "--", "sh", "-c", script}},
	}
	times := make([][]time.Duration, len(variants))
	for r := 0; r < runs+1; r++ {
		for i, v := range variants {
			d, err := benchpty.Run(ws, nil, v.argv)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			if r > 0 { // the first round warms the caches
				times[i] = append(times[i], d)
			}
		}
	}
	fmt.Printf("cordon run of %d requests through the proxy to an allowed host, %d interleaved runs each, on a pty:\n", reqs, runs)
	m0 := median(times[0])
	for i, v := range variants {
		m := median(times[i])
		fmt.Printf("  %-13s median %8.1f ms  (%.1f ms per request)  ratio to main %.3f\n", v.name, ms(m), ms(m)/float64(reqs), float64(m)/float64(m0))
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
