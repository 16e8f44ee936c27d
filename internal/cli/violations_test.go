package cli

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/internal/audit"
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
	home := "/home/you"
	deep := home + "/src/project/" + strings.Repeat("d/", 30) + "secrets.yaml"
	err := writeTable(&b, []audit.Record{
		{Timestamp: ts, Command: strings.Repeat("c", 60), Operation: "network-connect", Host: "evil.test", Port: 443, Action: audit.ActionDenied, Rule: "network.deny"},
		{Timestamp: ts, Command: "git", Operation: "file-write", Path: "/w/x\n", Action: audit.ActionWarned, Rule: "planted:hook"},
		{Timestamp: ts, Command: "cat " + home + "/.ssh/id_rsa", Operation: "file-read", Path: home + "/.ssh/id_rsa", Action: audit.ActionDenied, Rule: "filesystem.deny: " + home + "/.ssh " + strings.Repeat("x", 120)},
		{Timestamp: ts, Command: "cat", Operation: "file-read", Path: deep, Action: audit.ActionDenied, Rule: "**/secrets.*"},
	}, home)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 100 {
			t.Errorf("line of %d columns: %q", n, l)
		}
		if strings.Contains(l, home) {
			t.Errorf("home not abbreviated: %q", l)
		}
	}
	if len(lines) != 9 || !strings.Contains(lines[1], "evil.test:443") || !strings.HasSuffix(lines[1], "…") ||
		!strings.Contains(lines[2], "rule: network.deny") || !strings.Contains(lines[3], `"/w/x\n"`) || !strings.Contains(lines[3], "warned") ||
		!strings.Contains(lines[5], "~/.ssh/id_rsa") || !strings.Contains(lines[6], "rule: filesystem.deny: ~/.ssh") ||
		!strings.Contains(lines[7], "…/d/d/") || !strings.Contains(lines[7], "/d/secrets.yaml") {
		t.Errorf("table:\n%s", b.String())
	}
}
