package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSessionJournal: a session's commands share one journal file,
// rewritten in place (same inode) for each command, whole each time
// (a shorter content after a longer one still reads), naming no roots
// between commands; a host killed while a command runs leaves a journal
// the next run sweeps, reporting what the command planted, and one
// killed between commands leaves one that reports nothing; close removes
// it.
func TestSessionJournal(t *testing.T) {
	state, ws := t.TempDir(), t.TempDir()
	long := journal{Start: time.Now().UnixNano(), Roots: []string{ws, filepath.Join(ws, strings.Repeat("x", 200))}}
	short := journal{Start: time.Now().UnixNano(), Roots: []string{ws}}

	read := func() (journal, string, uint64) {
		t.Helper()
		ents, err := os.ReadDir(journalDir(state))
		if err != nil || len(ents) != 1 {
			t.Fatalf("want one journal in %s, got %d (%v)", journalDir(state), len(ents), err)
		}
		p := filepath.Join(journalDir(state), ents[0].Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var j journal
		if err := json.Unmarshal(b, &j); err != nil {
			t.Fatalf("journal %q does not read whole: %v", b, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return j, p, fi.Sys().(*syscall.Stat_t).Ino
	}

	var s sessionJournal
	if !s.record(state, long) {
		t.Fatal("record failed")
	}
	j, _, ino := read()
	if j.Pid != os.Getpid() || len(j.Roots) != 2 {
		t.Errorf("first command's journal: %+v", j)
	}
	s.idle()
	if j, _, i := read(); len(j.Roots) != 0 || i != ino {
		t.Errorf("between commands: %+v, inode %d (want no roots in inode %d)", j, i, ino)
	}
	if !s.record(state, short) {
		t.Fatal("record failed")
	}
	j, p, i := read()
	if len(j.Roots) != 1 || j.Roots[0] != ws || j.Start != short.Start || i != ino {
		t.Errorf("second command's journal: %+v, inode %d (want %d)", j, i, ino)
	}

	// The host killed while the command runs: its journal, under a dead
	// pid's name as a killed host's, is swept with what was planted.
	if err := os.WriteFile(filepath.Join(ws, ".envrc"), []byte("echo planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(journalDir(state), fmt.Sprintf("%d-0a1b2c3d4e5f.json", deadPid(t)))
	dead := strings.Replace(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid()), fmt.Sprintf(`"pid":%d`, deadPid(t)), 1)
	if err := os.WriteFile(killed, []byte(dead), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := sweepJournals(state, nil)
	if len(lines) == 0 || !strings.Contains(strings.Join(lines, "\n"), ".envrc") {
		t.Errorf("a host killed during a command: sweep says %q, want the planted .envrc", lines)
	}

	// Killed between commands: nothing to report.
	s.idle()
	b, err = os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dead = strings.Replace(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid()), fmt.Sprintf(`"pid":%d`, deadPid(t)), 1)
	if err := os.WriteFile(killed, []byte(dead), 0o600); err != nil {
		t.Fatal(err)
	}
	if lines := sweepJournals(state, nil); len(lines) != 0 {
		t.Errorf("a host killed between commands: sweep says %q, want nothing", lines)
	}
	if _, err := os.Lstat(killed); err == nil {
		t.Error("the idle journal of a killed host is left")
	}

	s.close()
	if ents, _ := os.ReadDir(journalDir(state)); len(ents) != 0 {
		t.Errorf("journals left after close: %v", ents)
	}
}

// BenchmarkJournal compares a command's journal as a file made and
// removed (a run's, writeJournal) with a session's, rewritten in place
// and made idle (sessionJournal).
func BenchmarkJournal(b *testing.B) {
	state, ws := b.TempDir(), b.TempDir()
	j := journal{Start: time.Now().UnixNano(), Roots: []string{ws}}
	b.Run("file per command", func(b *testing.B) {
		for b.Loop() {
			os.Remove(writeJournal(state, j))
		}
	})
	b.Run("session", func(b *testing.B) {
		var s sessionJournal
		defer s.close()
		for b.Loop() {
			s.record(state, j)
			s.idle()
		}
	})
}
