//go:build unix

package launch

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/monitor"
	"github.com/cordon-sandbox/cordon/internal/monitor/seatbeltlog"
)

// TestLogWatch runs the log stream's reader against a shell script that
// prints what /usr/bin/log stream --style ndjson prints (only macOS has
// the real one): the start waits for the first line, fails on a stream
// that errs, ends or says nothing, and stop passes on every denial of
// this run, late ones included, and says when the stream died.
func TestLogWatch(t *testing.T) {
	const tag = "cordon-00112233445566778899aabbccddeeff"
	p, err := seatbeltlog.NewParser(tag)
	if err != nil {
		t.Fatal(err)
	}
	deny := func(msg string) string {
		return `{"eventMessage":"` + msg + `","processID":0,"messageType":"Error"}`
	}
	ours := deny(`Sandbox: cat(7) deny(1) file-read-data /Users/x/.ssh/id_rsa\n` + tag)
	theirs := deny(`Sandbox: cat(8) deny(1) file-read-data /Users/x/.ssh/id_rsa\ncordon-ffffffffffffffffffffffffffffffff`)
	dup := deny(`2 duplicate reports for Sandbox: cat(7) deny(1) file-read-data /Users/x/.ssh/id_rsa\n` + tag)
	header := `Filtering the log data using "eventMessage ENDSWITH \"` + tag + `\""`
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

	tests := []struct {
		name     string
		argv     []string
		startErr string // "": it starts
		sleep    time.Duration
		want     int64
		degraded bool
	}{
		{"header on stdout, denials, one late", sh("printf '%s\\n' " + quote(header) + "; printf '%s\\n' " + quote(ours) + "; printf '%s\\n' " + quote(theirs) +
			"; echo garbage; sleep 0.3; printf '%s\\n' " + quote(dup) + "; exec sleep 30"), "", 0, 3, false},
		{"header on stderr", sh("printf '%s\\n' " + quote(header) + " >&2; sleep 0.1; printf '%s\\n' " + quote(ours) + "; exec sleep 30"), "", 0, 1, false},
		{"stream dies during the run", sh("printf '%s\\n' " + quote(header) + "; printf '%s\\n' " + quote(ours) + "; exit 3"), "", 100 * time.Millisecond, 1, true},
		{"error before the header", sh("echo 'log: Cannot run while sandboxed' >&2; exit 64"), "Cannot run while sandboxed", 0, 0, false},
		{"silent", sh("exec sleep 30"), "printed nothing", 0, 0, false},
		{"no such program", []string{"/nonexistent/log", "stream"}, "starting /nonexistent/log", 0, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []monitor.Event
			lw, err := startLogWatch(tc.argv, p, func(ev monitor.Event) { mu.Lock(); got = append(got, ev); mu.Unlock() }, time.Second)
			if tc.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.startErr) {
					t.Fatalf("startLogWatch: %v, want an error saying %q", err, tc.startErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.sleep) // the command's run
			start := time.Now()
			n, degraded := lw.stop(time.Now(), 500*time.Millisecond, 200*time.Millisecond, 2*time.Second)
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("stop took %s", took)
			}
			if n != tc.want || (degraded != "") != tc.degraded {
				t.Errorf("stop = %d, %q; want %d, degraded %v", n, degraded, tc.want, tc.degraded)
			}
			mu.Lock()
			defer mu.Unlock()
			if int64(len(got)) != tc.want || slices.ContainsFunc(got, func(ev monitor.Event) bool { return ev.Pid != 7 }) {
				t.Errorf("events %+v", got)
			}
		})
	}
}
