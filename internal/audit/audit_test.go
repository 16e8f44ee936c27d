package audit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecordFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "cordon", "audit.jsonl")
	l, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	if err := l.Record(Record{Timestamp: ts, SessionID: "s1", Command: "mcp read_file", Operation: "file-read",
		Path: "/w/.env", Action: ActionDenied, Rule: "**/.env", Mode: "standard"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(Record{SessionID: "s1", Command: "curl", Operation: "network-connect", Host: "169.254.169.254", Port: 80, Action: ActionDenied, Rule: "169.254.169.254:*", Mode: "strict"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), data)
	}
	want := `{"timestamp":"2026-01-02T02:04:05Z","session_id":"s1","command":"mcp read_file","operation":"file-read","path":"/w/.env","action":"denied","rule":"**/.env","mode":"standard"}`
	if lines[0] != want {
		t.Errorf("line 1:\n got %s\nwant %s", lines[0], want)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !reflect.DeepEqual(keys, []string{"action", "command", "host", "mode", "operation", "port", "rule", "session_id", "timestamp"}) {
		t.Errorf("keys = %v", keys)
	}
	if _, err := time.Parse(time.RFC3339, m["timestamp"].(string)); err != nil || !strings.HasSuffix(m["timestamp"].(string), "Z") {
		t.Errorf("timestamp %v is not RFC 3339 UTC: %v", m["timestamp"], err)
	}
	var r Record
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Timestamp.Equal(ts) || r.Path != "/w/.env" || r.Rule != "**/.env" {
		t.Errorf("round trip: %+v", r)
	}
}

func TestPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "audit.jsonl")
	l, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, want := range map[string]os.FileMode{path: 0o600, dir: 0o700, filepath.Dir(dir): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if l.Path() != path {
		t.Errorf("Path = %q", l.Path())
	}
}

func TestConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	// Two Logs on the same file, as two cordon processes would have.
	l1, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 200
	long := strings.Repeat("x", 3000)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			l := l1
			if w%2 == 1 {
				l = l2
			}
			for i := 0; i < each; i++ {
				if err := l.Record(Record{SessionID: fmt.Sprint(w), Command: "c", Operation: "file-write", Path: fmt.Sprintf("/p/%d/%s", i, long), Action: ActionDenied, Mode: "standard"}); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	l1.Close()
	l2.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n := 0
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d is not a record: %v", n+1, err)
		}
		n++
	}
	if n != workers*each {
		t.Errorf("got %d records, want %d", n, workers*each)
	}
}

func TestNilAndClosed(t *testing.T) {
	var l *Log
	if err := l.Record(Record{}); err != nil {
		t.Errorf("nil log: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Error(err)
	}
	if _, err := Open("", 0); err == nil {
		t.Error("Open(\"\") succeeded")
	}
	if _, err := Open(t.TempDir(), 0); err == nil {
		t.Error("Open(dir) succeeded")
	}
	l2, err := Open(filepath.Join(t.TempDir(), "a.jsonl"), 0)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if err := l2.Record(Record{}); err == nil {
		t.Error("Record after Close succeeded")
	}
}

func TestNewSessionID(t *testing.T) {
	a, b := NewSessionID(), NewSessionID()
	if a == b || len(a) != len("20260102T150405Z-1a2b3c4d") {
		t.Errorf("ids %q %q", a, b)
	}
}
