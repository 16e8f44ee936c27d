//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// violation is the part of an audit record the tests read.
type violation struct {
	Timestamp string `json:"timestamp"`
	SessionID string `json:"session_id"`
	Command   string `json:"command"`
	Operation string `json:"operation"`
	Path      string `json:"path"`
	Action    string `json:"action"`
	Rule      string `json:"rule"`
	Mode      string `json:"mode"`
}

// plantHook is a script that plants an executable pre-commit hook in a new
// repository named dir.
func plantHook(dir string) string {
	return fmt.Sprintf(`git init -q "%s" && printf '#!/bin/sh\necho HOOK\n' > "%s/.git/hooks/pre-commit" && chmod +x "%s/.git/hooks/pre-commit"`, dir, dir, dir)
}

// TestViolations: what a run planted is listed by cordon violations, as a
// table whose fields a planted name cannot turn into terminal control
// sequences, and as JSON lines in the audit log's format; --session and
// --since select, and a bad --since is one line and exit 125.
func TestViolations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hostile := "evil\x1b[2J\u202e"
	for _, dir := range []string{"plain", hostile} {
		if r := e.sh(plantHook(dir)); r.code != 0 {
			t.Fatalf("planting in %q: %s", dir, r)
		}
	}
	r := e.run("violations")
	if r.code != 0 {
		t.Fatalf("cordon violations: %s", r)
	}
	// A header, then each record in two lines: its fields, and the rule.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "plain/.git/hooks/pre-commit") ||
		!strings.Contains(lines[2], "rule: planted:hook") || !strings.Contains(lines[1], "denied") || !strings.Contains(lines[1], "file-write") {
		t.Fatalf("want a header and two records:\n%s", r)
	}
	if strings.ContainsAny(r.stdout, "\x1b\u202e") || !strings.Contains(lines[3], `[2J\u202e`) { // quoted (a long path is cut at its start)
		t.Errorf("a planted name's control characters reached the table unquoted:\n%q", lines[3])
	}

	r = e.run("violations", "--json")
	var recs []violation
	for l := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
		var v violation
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("--json printed a line that is not a record: %q: %v", l, err)
		}
		recs = append(recs, v)
	}
	if r.code != 0 || len(recs) != 2 || recs[0].SessionID == "" || recs[0].SessionID == recs[1].SessionID || recs[1].Path != e.ws+"/"+hostile+"/.git/hooks/pre-commit" || recs[0].Mode != "standard" {
		t.Fatalf("--json: %+v\n%s", recs, r)
	}

	r = e.run("violations", "--session", recs[1].SessionID, "--json")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, recs[1].SessionID) {
		t.Errorf("--session %s: %s", recs[1].SessionID, r)
	}
	r = e.run("violations", "--session", "no-such-session")
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, "cordon: no violations in the last 24h in "+e.home+"/.local/state/cordon/audit.jsonl") {
		t.Errorf("an unknown session: %s", r)
	}
	r = e.run("violations", "--since", "1h", "--json")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("--since 1h: %s", r)
	}
	r = e.run("violations", "--since", "yesterday")
	if r.code != 125 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, `--since "yesterday": not a duration; use one like 90m, 24h or 7d`) {
		t.Errorf("a bad --since: %s", r)
	}
}

// TestViolationsOfConcurrentRuns: 20 runs at once, each planting a hook in
// a repository of its own, append to one audit log: cordon violations reads
// back 20 whole records, one per path, in a log rotated on the way
// (audit.max_size_mb: 1 over records padded to 60 kB by their command).
func TestViolationsOfConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const runs = 20
	// A long command line (recorded with each record) makes the 20
	// records about 1.2 MB: the log rotates once.
	pad := strings.Repeat("p", 60<<10)
	writeFile(t, e.home+"/.config/cordon/config.yaml", "sandbox:\n  audit:\n    max_size_mb: 1\n")
	var wg sync.WaitGroup
	errs := make([]string, runs)
	for i := range runs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			c := e.command(ctx, "run", "--", "sh", "-c", plantHook(fmt.Sprintf("r%02d", i)), pad)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Run(); err != nil {
				errs[i] = fmt.Sprintf("run %d: %v\n%s", i, err, out.String())
			}
		})
	}
	wg.Wait()
	for _, s := range errs {
		if s != "" {
			t.Fatal(s)
		}
	}
	log := e.home + "/.local/state/cordon/audit.jsonl"
	if readFile(t, log+".1") == "" {
		t.Fatal("the log was not rotated")
	}
	r := e.run("violations", "--json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("cordon violations: %s", r.stderr)
	}
	seen := map[string]bool{}
	sessions := map[string]bool{}
	n := 0
	for l := range strings.SplitSeq(strings.TrimSpace(r.stdout), "\n") {
		var v violation
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("a record is not whole: %.200q: %v", l, err)
		}
		seen[strings.TrimPrefix(v.Path, e.ws+"/")] = true
		sessions[v.SessionID] = true
		n++
	}
	for i := range runs {
		if p := fmt.Sprintf("r%02d/.git/hooks/pre-commit", i); !seen[p] {
			t.Errorf("no record of %s", p)
		}
	}
	// A run reports what appeared in the workspace while it ran, so a
	// repository planted by one run may be reported by another of the
	// same workspace that checked first: once, by one of them.
	if n != runs || len(seen) != runs || len(sessions) == 0 {
		t.Errorf("%d records, %d paths and %d sessions, want %d records and paths", n, len(seen), len(sessions), runs)
	}
}
