package audit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestWriterProcess is one of TestRotationAcrossProcesses's writers when
// run with AUDIT_TEST_LOG set; otherwise it does nothing.
func TestWriterProcess(t *testing.T) {
	path := os.Getenv("AUDIT_TEST_LOG")
	if path == "" {
		return
	}
	max, _ := strconv.ParseInt(os.Getenv("AUDIT_TEST_MAX"), 10, 64)
	n, _ := strconv.Atoi(os.Getenv("AUDIT_TEST_N"))
	l, err := Open(path, max)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range n {
		if err := l.Record(Record{SessionID: os.Getenv("AUDIT_TEST_SESSION"), Command: "writer", Operation: "file-write",
			Path: fmt.Sprintf("/w/%d", i), Action: ActionDenied, Rule: "test", Mode: "standard"}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRotationAcrossProcesses: 20 processes append to one log at once while
// it rotates; every record is read back once and whole, from the log and
// its rotated generation.
func TestRotationAcrossProcesses(t *testing.T) {
	const procs, each = 20, 150
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// A record is about 170 bytes: 3000 of them are about 510 kB, so a
	// bound of 300 kB rotates once and keeps every record in two files.
	const max = 300 << 10
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		c := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
		c.Env = append(os.Environ(), "AUDIT_TEST_LOG="+path, "AUDIT_TEST_MAX="+strconv.Itoa(max),
			"AUDIT_TEST_N="+strconv.Itoa(each), fmt.Sprintf("AUDIT_TEST_SESSION=s%02d", i))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		outs[i] = &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = c
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("a writer failed: %v\n%s", err, outs[i])
		}
	}
	if _, err := os.Stat(path + Rotated); err != nil {
		t.Fatalf("the log was not rotated: %v", err)
	}
	recs, st, err := Read(path, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != 0 {
		t.Errorf("%d lines are not records", st.Skipped)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.SessionID+r.Path]++
	}
	for i := range procs {
		for j := range each {
			if k := fmt.Sprintf("s%02d/w/%d", i, j); seen[k] != 1 {
				t.Errorf("record %s read %d times", k, seen[k])
			}
		}
	}
	if len(recs) != procs*each {
		t.Errorf("read %d records, want %d", len(recs), procs*each)
	}
}

// TestRotate: one Log past its bound moves the file to FILE.1 (replacing
// the older generation) and goes on in a new file; a Log whose file was
// rotated by another follows to the new file.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	rec := func(l *Log, p string) {
		t.Helper()
		if err := l.Record(Record{Command: "c", Operation: "file-read", Path: p, Action: ActionDenied}); err != nil {
			t.Fatal(err)
		}
	}
	one, err := Record{Command: "c", Operation: "file-read", Path: "/1", Action: ActionDenied, Timestamp: time.Now()}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	bound := int64(len(one)+1) * 7 / 2 // three records and a half
	a, err := Open(path, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(path, bound)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec(a, "/1")
	rec(a, "/2")
	rec(a, "/3") // not yet at the bound
	if _, err := os.Stat(path + Rotated); err == nil {
		t.Fatal("rotated before the bound")
	}
	rec(a, "/4") // past the bound: rotated after it
	if _, err := os.Stat(path + Rotated); err != nil {
		t.Fatalf("not rotated past the bound: %v", err)
	}
	rec(b, "/5") // b held the old file: it follows to the new one
	cur, _, err := readOne(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(cur) != 1 || cur[0].Path != "/5" {
		t.Errorf("the new file holds %v, want /5 only", paths(cur))
	}
	prev, _, err := readOne(path + Rotated)
	if err != nil {
		t.Fatal(err)
	}
	if got := paths(prev); fmt.Sprint(got) != "[/1 /2 /3 /4]" {
		t.Errorf("the rotated file holds %v", got)
	}
}

// readOne reads one file of a log, without its other generation.
func readOne(p string) ([]Record, ReadStats, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, ReadStats{}, err
	}
	defer f.Close()
	var st ReadStats
	recs, err := readFrom(f, Filter{}, nil, &st)
	return recs, st, err
}

func paths(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Path)
	}
	return out
}

// TestRead: the filters, the order across generations, and lines that
// are not records.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	line := func(min int, session, action, p string) string {
		b, err := Record{Timestamp: t0.Add(time.Duration(min) * time.Minute), SessionID: session, Command: "c",
			Operation: "file-read", Path: p, Action: action, Rule: "r", Mode: "standard"}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	long := `{"timestamp":"2026-11-27T10:00:00Z","path":"` + string(make([]byte, 70<<10)) + "\"}\n"
	if err := os.WriteFile(path+Rotated, []byte(line(0, "a", ActionDenied, "/old")+line(2, "b", ActionAllowed, "/old-allowed")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(line(1, "a", ActionDenied, "/late-in-old-order")+"{torn\n"+long+"\n"+
		line(3, "b", ActionWarned, "/warned")+line(4, "a", ActionDenied, "/new")+`{"timestamp":"2026-11-27T10:05:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		f       Filter
		want    string
		skipped int
	}{
		{"all", Filter{}, "[/old /late-in-old-order /old-allowed /warned /new]", 3},
		{"since", Filter{Since: t0.Add(3 * time.Minute)}, "[/warned /new]", 3},
		{"session", Filter{Session: "a"}, "[/old /late-in-old-order /new]", 3},
		{"violations", Filter{Actions: []string{ActionDenied, ActionWarned}}, "[/old /late-in-old-order /warned /new]", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs, st, err := Read(path, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(paths(recs)); got != tt.want || st.Skipped != tt.skipped {
				t.Errorf("Read = %s, %d skipped; want %s, %d", got, st.Skipped, tt.want, tt.skipped)
			}
		})
	}
	if recs, _, err := Read(filepath.Join(dir, "absent.jsonl"), Filter{}); err != nil || len(recs) != 0 {
		t.Errorf("a missing log: %v, %v", recs, err)
	}
}
