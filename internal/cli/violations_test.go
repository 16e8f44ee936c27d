package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/audit"
)

func TestParseSince(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"24h", 24 * time.Hour, true},
		{"90m", 90 * time.Minute, true},
		{"7d", 7 * 24 * time.Hour, true},
		{"0", 0, true},
		{"-1h", 0, false},
		{"0d", 0, false},
		{"d", 0, false},
		{"1.5d", 0, false},
		{"yesterday", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSince(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseSince(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/w/.git/hooks/pre-commit", "/w/.git/hooks/pre-commit"},
		{"/w/é ü/x", "/w/é ü/x"},
		{"", "-"},
		{"a\nb", `"a\nb"`},
		{"a\tb", `"a\tb"`},
		{"\x1b[2Jx", `"\x1b[2Jx"`},
		{"abc\u202etxt.exe", `"abc\u202etxt.exe"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
	}
	for _, tt := range tests {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("printable(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	ts := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	err := writeTable(&b, []audit.Record{
		{Timestamp: ts, Command: strings.Repeat("c", 60), Operation: "network-connect", Host: "evil.test", Port: 443, Action: audit.ActionDenied, Rule: "network.deny"},
		{Timestamp: ts, Command: "git", Operation: "file-write", Path: "/w/x\n", Action: audit.ActionWarned, Rule: "planted:hook"},
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "evil.test:443") || !strings.Contains(lines[1], strings.Repeat("c", 39)+"…") ||
		strings.Contains(lines[1], strings.Repeat("c", 40)) || !strings.Contains(lines[2], `"/w/x\n"`) || !strings.Contains(lines[2], "warned") {
		t.Errorf("table:\n%s", b.String())
	}
}
