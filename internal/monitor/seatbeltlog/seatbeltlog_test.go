package seatbeltlog

import (
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/monitor"
)

const tag = "cordon-0123456789abcdef"

// logLine is one line of /usr/bin/log stream --style ndjson carrying
// message, with the fields a kernel Sandbox message has there.
func logLine(t *testing.T, message string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"traceID":              1234567890123,
		"eventMessage":         message,
		"eventType":            "logEvent",
		"source":               nil,
		"formatString":         "%s",
		"activityIdentifier":   0,
		"subsystem":            "",
		"category":             "",
		"threadID":             4242,
		"senderImageUUID":      "3F2E5B0A-0000-0000-0000-000000000000",
		"backtrace":            map[string]any{"frames": []any{}},
		"bootUUID":             "",
		"processImagePath":     "/kernel",
		"timestamp":            "2026-05-04 10:11:12.345678+0200",
		"senderImagePath":      "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox",
		"machTimestamp":        987654321,
		"messageType":          "Error",
		"processImageUUID":     "00000000-0000-0000-0000-000000000000",
		"processID":            0,
		"senderProgramCounter": 1234,
		"timezoneName":         "",
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParse(t *testing.T) {
	p, err := NewParser(tag)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		line string
		want Denial // Count 0: not a denial of this run
	}{
		{"secret read", logLine(t, "Sandbox: cat(1234) deny(1) file-read-data /Users/x/.ssh/id_rsa\n"+tag),
			Denial{monitor.Event{Pid: 1234, Call: "file-read-data", Op: monitor.OpRead, Path: "/Users/x/.ssh/id_rsa", Comm: "cat"}, 1}},
		{"metadata", logLine(t, "Sandbox: zsh(77) deny(1) file-read-metadata /Users/x/.zshenv\n"+tag),
			Denial{monitor.Event{Pid: 77, Call: "file-read-metadata", Op: monitor.OpRead, Path: "/Users/x/.zshenv", Comm: "zsh"}, 1}},
		{"path with spaces", logLine(t, "Sandbox: cp(9) deny(1) file-write-create /Users/x/Library/Application Support/Code/User/settings.json\n"+tag),
			Denial{monitor.Event{Pid: 9, Call: "file-write-create", Op: monitor.OpWrite, Path: "/Users/x/Library/Application Support/Code/User/settings.json", Comm: "cp"}, 1}},
		{"unicode path", logLine(t, "Sandbox: vim(10) deny(1) file-write-data /Users/jörg/Документы/naïve ✓.txt\n"+tag),
			Denial{monitor.Event{Pid: 10, Call: "file-write-data", Op: monitor.OpWrite, Path: "/Users/jörg/Документы/naïve ✓.txt", Comm: "vim"}, 1}},
		{"path with a newline", logLine(t, "Sandbox: sh(11) deny(1) file-write-unlink /Users/x/a\nb\n"+tag),
			Denial{monitor.Event{Pid: 11, Call: "file-write-unlink", Op: monitor.OpWrite, Path: "/Users/x/a\nb", Comm: "sh"}, 1}},
		{"name with a space and parentheses", logLine(t, "Sandbox: Gradle Worker (2)(10) deny(1) file-read-data /Users/x/.gradle/gradle.properties\n"+tag),
			Denial{monitor.Event{Pid: 10, Call: "file-read-data", Op: monitor.OpRead, Path: "/Users/x/.gradle/gradle.properties", Comm: "Gradle Worker (2)"}, 1}},
		{"exec", logLine(t, "Sandbox: bash(12) deny(1) process-exec* /Users/x/bin/tool\n"+tag),
			Denial{monitor.Event{Pid: 12, Call: "process-exec*", Op: monitor.OpExec, Path: "/Users/x/bin/tool", Comm: "bash"}, 1}},
		{"network, address", logLine(t, "Sandbox: curl(13) deny(1) network-outbound 93.184.215.14:443\n"+tag),
			Denial{monitor.Event{Pid: 13, Call: "network-outbound", Op: monitor.OpConnect, Addr: netip.MustParseAddrPort("93.184.215.14:443"), Comm: "curl"}, 1}},
		{"network, remote prefix, IPv6", logLine(t, "Sandbox: curl(13) deny(1) network-outbound remote:[2606:2800:220:1::1]:443\n"+tag),
			Denial{monitor.Event{Pid: 13, Call: "network-outbound", Op: monitor.OpConnect, Addr: netip.MustParseAddrPort("[2606:2800:220:1::1]:443"), Comm: "curl"}, 1}},
		{"network, no host", logLine(t, "Sandbox: curl(14) deny(1) network-outbound remote:*:443\n"+tag),
			Denial{monitor.Event{Pid: 14, Call: "network-outbound", Op: monitor.OpConnect, Name: "remote:*:443", Comm: "curl"}, 1}},
		{"unix socket", logLine(t, "Sandbox: curl(15) deny(1) network-outbound /private/var/run/mDNSResponder\n"+tag),
			Denial{monitor.Event{Pid: 15, Call: "network-outbound", Op: monitor.OpConnect, Path: "/private/var/run/mDNSResponder", Comm: "curl"}, 1}},
		{"bind", logLine(t, "Sandbox: node(16) deny(1) network-bind local:*:8080\n"+tag),
			Denial{monitor.Event{Pid: 16, Call: "network-bind", Op: monitor.OpBind, Name: "local:*:8080", Comm: "node"}, 1}},
		{"mach lookup", logLine(t, "Sandbox: java(17) deny(1) mach-lookup com.apple.FontServer\n"+tag),
			Denial{monitor.Event{Pid: 17, Call: "mach-lookup", Op: monitor.OpOther, Name: "com.apple.FontServer", Comm: "java"}, 1}},
		{"sysctl", logLine(t, "Sandbox: ls(18) deny(1) sysctl-read kern.bootargs\n"+tag),
			Denial{monitor.Event{Pid: 18, Call: "sysctl-read", Op: monitor.OpOther, Name: "kern.bootargs", Comm: "ls"}, 1}},
		{"no target", logLine(t, "Sandbox: python3.12(19) deny(1) signal\n"+tag),
			Denial{monitor.Event{Pid: 19, Call: "signal", Op: monitor.OpOther, Comm: "python3.12"}, 1}},
		{"duplicate report", logLine(t, "3 duplicate reports for Sandbox: sh(5) deny(1) file-write-data /dev/dtracehelper\n"+tag),
			Denial{monitor.Event{Pid: 5, Call: "file-write-data", Op: monitor.OpWrite, Path: "/dev/dtracehelper", Comm: "sh"}, 3}},
		{"one duplicate report", logLine(t, "1 duplicate report for Sandbox: sh(5) deny(1) file-read-data /Users/x/.env\n"+tag),
			Denial{monitor.Event{Pid: 5, Call: "file-read-data", Op: monitor.OpRead, Path: "/Users/x/.env", Comm: "sh"}, 1}},
		{"tag after a space", logLine(t, "Sandbox: cat(20) deny(1) file-read-data /etc/master.passwd "+tag),
			Denial{monitor.Event{Pid: 20, Call: "file-read-data", Op: monitor.OpRead, Path: "/etc/master.passwd", Comm: "cat"}, 1}},
		{"trailing newline", logLine(t, "Sandbox: cat(21) deny(1) file-read-data /Users/x/.aws/credentials\n"+tag+"\n"),
			Denial{monitor.Event{Pid: 21, Call: "file-read-data", Op: monitor.OpRead, Path: "/Users/x/.aws/credentials", Comm: "cat"}, 1}},

		{"another run's tag", logLine(t, "Sandbox: cat(1) deny(1) file-read-data /Users/x/.ssh/id_rsa\ncordon-fedcba9876543210"), Denial{}},
		{"tag in the path only", logLine(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/"+tag+"/x\ncordon-fedcba9876543210"), Denial{}},
		{"tag glued to the path", logLine(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x"+tag), Denial{}},
		{"a longer tag", logLine(t, "Sandbox: cat(1) deny(1) file-read-data /tmp/x\nx"+tag), Denial{}},
		{"header", `Filtering the log data using "eventMessage ENDSWITH \"` + tag + `\""`, Denial{}},
		{"empty", "", Denial{}},
		{"garbage", "\x00\xff{not json", Denial{}},
		{"truncated JSON", logLine(t, "Sandbox: cat(1) deny(1) file-read-data /x\n"+tag)[:40], Denial{}},
		{"no eventMessage", `{"eventType":"logEvent","processID":0}`, Denial{}},
		{"not a denial", logLine(t, "Sandbox: cat(1) allow(0) file-read-data /x\n"+tag), Denial{}},
		{"not Sandbox", logLine(t, "System Policy: ls(3) deny(1) file-read-data /Users/x/Library/Safari\n"+tag), Denial{}},
		{"only the tag", logLine(t, tag), Denial{}},
		{"bad pid", logLine(t, "Sandbox: cat(x) deny(1) file-read-data /x\n"+tag), Denial{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := p.Parse([]byte(tc.line))
			if ok != (tc.want.Count > 0) {
				t.Fatalf("Parse ok = %v, want %v (%+v)", ok, tc.want.Count > 0, got)
			}
			if got != tc.want {
				t.Errorf("Parse =\n  %+v\nwant\n  %+v", got, tc.want)
			}
		})
	}
}

// TestParseHostileName: a program named to look like a denial mislabels
// only its own denial, which stays a denial of this run.
func TestParseHostileName(t *testing.T) {
	p, err := NewParser(tag)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := p.Parse([]byte(logLine(t, "Sandbox: x(1) deny(1) mach-lookup a(99) deny(1) file-read-data /Users/x/.ssh/id_rsa\n"+tag)))
	if !ok || d.Event.Pid != 1 || d.Event.Op != monitor.OpOther || d.Event.Name != "a(99) deny(1) file-read-data /Users/x/.ssh/id_rsa" {
		t.Errorf("Parse = %+v, %v", d, ok)
	}
}

func TestTagRefused(t *testing.T) {
	for _, bad := range []string{
		"",
		"cordon-",
		"cordon-0123",                        // too short
		"cordon-0123456789ABCDEF",            // upper case
		"cordon-0123456789abcdeg",            // not hex
		`cordon-0123456789abcdef" OR 1==1 "`, // a quote
		"cordon-0123456789abcdef\n",
		"cordon-0123456789abcdef\\",
		"other-0123456789abcdef",
		"cordon-" + strings.Repeat("a", 65),
	} {
		if _, err := Argv(bad); !errors.Is(err, ErrTag) {
			t.Errorf("Argv(%q): err = %v, want ErrTag", bad, err)
		}
		if _, err := NewParser(bad); !errors.Is(err, ErrTag) {
			t.Errorf("NewParser(%q): err = %v, want ErrTag", bad, err)
		}
	}
}

func TestArgv(t *testing.T) {
	got, err := Argv(tag)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/usr/bin/log", "stream", "--style", "ndjson", "--predicate", `eventMessage ENDSWITH "cordon-0123456789abcdef"`}
	if !slices.Equal(got, want) {
		t.Errorf("Argv = %q, want %q", got, want)
	}
}

func TestScan(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"lines", "a\nb\n", []string{"a", "b"}},
		{"no final newline", "a\nb", []string{"a", "b"}},
		{"empty lines kept", "a\n\nb\n", []string{"a", "", "b"}},
		{"too long skipped", "a\n" + long + "\nb\n", []string{"a", "b"}},
		{"longest kept", strings.Repeat("y", MaxLine) + "\n", []string{strings.Repeat("y", MaxLine)}},
		{"nothing", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			if err := Scan(strings.NewReader(tc.in), func(l []byte) { got = append(got, string(l)) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Scan: %d lines, want %d", len(got), len(tc.want))
			}
		})
	}
}

// TestScanParse: a stream as log prints it (header, two runs' denials,
// garbage, a duplicate report), read whole.
func TestScanParse(t *testing.T) {
	p, err := NewParser(tag)
	if err != nil {
		t.Fatal(err)
	}
	stream := strings.Join([]string{
		`Filtering the log data using "eventMessage ENDSWITH \"` + tag + `\""`,
		logLine(t, "Sandbox: cat(1) deny(1) file-read-data /Users/x/.ssh/id_rsa\n"+tag),
		logLine(t, "Sandbox: cat(2) deny(1) file-read-data /Users/x/.ssh/id_rsa\ncordon-fedcba9876543210"),
		"garbage",
		logLine(t, "2 duplicate reports for Sandbox: cat(1) deny(1) file-read-data /Users/x/.ssh/id_rsa\n"+tag),
	}, "\n") + "\n"
	n := 0
	if err := Scan(strings.NewReader(stream), func(l []byte) {
		if d, ok := p.Parse(l); ok {
			n += d.Count
			if d.Event.Path != "/Users/x/.ssh/id_rsa" || d.Event.Pid != 1 {
				t.Errorf("denial %+v", d)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("%d denials, want 3", n)
	}
}

func TestUnprivate(t *testing.T) {
	for in, want := range map[string]string{
		"/private/tmp/x":       "/tmp/x",
		"/private/tmp":         "/tmp",
		"/private/var/run/a b": "/var/run/a b",
		"/private/etc/hosts":   "/etc/hosts",
		"/private/tmpfoo/x":    "",
		"/private/Users/x":     "",
		"/tmp/x":               "",
	} {
		if got := Unprivate(in); got != want {
			t.Errorf("Unprivate(%q) = %q, want %q", in, got, want)
		}
	}
}
