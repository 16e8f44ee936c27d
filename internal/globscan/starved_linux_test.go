package globscan

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSomeAvg10(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
		ok   bool
	}{
		{"a kernel's file", "some avg10=42.50 avg60=31.93 avg300=48.82 total=344412525\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", 42.5, true},
		{"only full", "full avg10=9.00 avg60=0.00 avg300=0.00 total=0\n", 0, false},
		{"garbled", "some avg10=x avg60=1\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := someAvg10([]byte(tt.in))
			if got != tt.want || ok != tt.ok {
				t.Errorf("someAvg10(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestExtend: a deadline that passes on a machine short of CPU moves one
// step later, never past starvedFactor times the bound; on an idle machine,
// or without PSI, it does not move.
func TestExtend(t *testing.T) {
	dir := t.TempDir()
	starved := filepath.Join(dir, "starved")
	idle := filepath.Join(dir, "idle")
	if err := os.WriteFile(starved, []byte("some avg10=95.00 avg60=80.00 avg300=20.00 total=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idle, []byte("some avg10=1.00 avg60=0.00 avg300=0.00 total=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(f []string) { pressureFiles = f }(pressureFiles)
	const bound = time.Second
	tests := []struct {
		name     string
		pressure string
		ran      time.Duration // how long ago the scan started
		want     bool
	}{
		{"starved, just past the bound", starved, bound + time.Millisecond, true},
		{"starved, near the cap", starved, starvedFactor*bound - 100*time.Millisecond, true},
		{"starved, at the cap", starved, starvedFactor * bound, false},
		{"idle", idle, bound + time.Millisecond, false},
		{"no PSI", filepath.Join(dir, "absent"), bound + time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pressureFiles = []string{tt.pressure}
			s := &scan{lim: Limits{Deadline: bound}.withDefaults(), start: time.Now().Add(-tt.ran)}
			s.until.Store(s.start.Add(bound).UnixNano())
			if !s.pastDeadline() {
				t.Fatal("the deadline has not passed")
			}
			if got := s.extend(); got != tt.want {
				t.Fatalf("extend() = %v, want %v", got, tt.want)
			}
			until := time.Unix(0, s.until.Load())
			if hard := s.start.Add(starvedFactor * bound); until.After(hard) {
				t.Errorf("the deadline moved to %v past the cap %v", until.Sub(s.start), hard.Sub(s.start))
			}
			if tt.want == s.pastDeadline() {
				t.Errorf("extend() = %v but pastDeadline() = %v", tt.want, s.pastDeadline())
			}
		})
	}
}

// TestScanOnAStarvedMachine: Scan gives a walk on a machine short of CPU
// more time than its bound, and still returns by starvedFactor times it.
func TestScanOnAStarvedMachine(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "tree")
	for i := range 200 {
		if err := os.MkdirAll(filepath.Join(root, "d"+string(rune('a'+i%26)), "e"+string(rune('a'+i/26))), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	starved := filepath.Join(dir, "starved")
	if err := os.WriteFile(starved, []byte("some avg10=95.00 avg60=80.00 avg300=20.00 total=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(f []string) { pressureFiles = f }(pressureFiles)
	pressureFiles = []string{starved}
	start := time.Now()
	// A bound of 1 ns has passed before the first directory is read: the
	// scan fails, but only at the cap (4 ns), not by waiting a step.
	if _, _, err := Scan(root, []string{"**/.env"}, Limits{Deadline: time.Nanosecond}); err == nil {
		t.Fatal("a scan with a 1 ns bound succeeded")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the scan took %v past a cap of 4 ns", took)
	}
}

// TestStarvedByAnyResource: a machine whose tasks wait for I/O or memory
// is starved as one whose tasks wait for a CPU; an absent file is skipped.
func TestStarvedByAnyResource(t *testing.T) {
	dir := t.TempDir()
	busy := filepath.Join(dir, "busy")
	idle := filepath.Join(dir, "idle")
	if err := os.WriteFile(busy, []byte("some avg10=60.00 avg60=40.00 avg300=10.00 total=1\nfull avg10=20.00 avg60=0.00 avg300=0.00 total=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idle, []byte("some avg10=0.50 avg60=0.00 avg300=0.00 total=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func(f []string) { pressureFiles = f }(pressureFiles)
	for _, tt := range []struct {
		name  string
		files []string
		want  bool
	}{
		{"CPU idle, I/O busy", []string{idle, busy, idle}, true},
		{"CPU idle, I/O absent, memory busy", []string{idle, filepath.Join(dir, "absent"), busy}, true},
		{"all idle", []string{idle, idle, idle}, false},
		{"no PSI", []string{filepath.Join(dir, "absent")}, false},
	} {
		pressureFiles = tt.files
		if got := cpuStarved(); got != tt.want {
			t.Errorf("%s: starved %v, want %v", tt.name, got, tt.want)
		}
	}
}
