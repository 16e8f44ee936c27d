package planted

import (
	"fmt"
	"strings"
	"testing"
)

// entryString is an entry as "key=value@line-endline", "key@line" when bare.
func entryString(e configEntry) string {
	if e.Bare {
		return fmt.Sprintf("%s@%d", e.Key(), e.Line)
	}
	return fmt.Sprintf("%s=%s@%d-%d", e.Key(), e.Value, e.Line, e.EndLine)
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"simple", "[core]\n\tbare = false\n", []string{"core.bare=false@1-1"}},
		{"case rules", "[CoRe]\n\tFsMonitor = X\n[Remote \"Origin\"]\n\tURL = u\n", []string{"core.fsmonitor=X@1-1", "remote.Origin.url=u@3-3"}},
		{"legacy subsection lower-cased", "[Remote.Origin]\nurl = u\n", []string{"remote.origin.url=u@1-1"}},
		{"bare key", "[core]\n  fsmonitor\n", []string{"core.fsmonitor@1"}},
		{"bare key with comment", "[core]\nfsmonitor ; yes\n", []string{"core.fsmonitor@1"}},
		{"comments", "# [core]\n; x = y\n[core] # c\n  pager = less # trailing\n  editor = vi;more\n", []string{"core.pager=less@3-3", "core.editor=vi@4-4"}},
		{"quotes keep comment chars and spaces", "[alias]\n\tx = \"!echo  # not a comment\"  \n", []string{"alias.x=!echo  # not a comment@1-1"}},
		{"each inner whitespace character becomes a space", "[a]\nb = one \t two   \n", []string{"a.b=one   two@1-1"}},
		{"escapes", "[a]\nb = x\\ty\\n\\\"\\\\\n", []string{"a.b=x\ty\n\"\\@1-1"}},
		{"continuation", "[core]\n\tfsmonitor = echo \\\n  hi\n\tbare = true\n", []string{"core.fsmonitor=echo   hi@1-2", "core.bare=true@3-3"}},
		{"continuation inside quotes", "[a]\nb = \"x\\\ny\"\n", []string{"a.b=xy@1-2"}},
		{"crlf", "[core]\r\n\tfsmonitor = run\r\n\tpager = p\\\r\nq\r\n", []string{"core.fsmonitor=run@1-1", "core.pager=pq@2-3"}},
		{"key after header", "[core] fsmonitor = x\n", []string{"core.fsmonitor=x@0-0"}},
		{"subsection escapes", "[diff \"a\\\"b\"]\ncommand = c\n", []string{"diff.a\"b.command=c@1-1"}},
		{"bad header skips its keys", "[core\nfsmonitor = x\n[ok]\nk = v\n", []string{"ok.k=v@3-3"}},
		{"bad lines skipped", "[a]\n1x = y\nb c\nd = e\n", []string{"a.d=e@3-3"}},
		{"empty value", "[a]\nb =\n", []string{"a.b=@1-1"}},
		{"no final newline", "[a]\nb = c", []string{"a.b=c@1-1"}},
		{"dangling continuation", "[a]\nb = c\\", []string{"a.b=c@1-1"}},
		{"empty", "", nil},
		{"byte order mark", "\xef\xbb\xbf[core]\n\tfsmonitor = x\n", []string{"core.fsmonitor=x@1-1"}},
		{"two headers on a line: the last counts", "[foo] [core]\nfsmonitor = x\n", []string{"core.fsmonitor=x@1-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range parseConfig([]byte(tt.in)) {
				got = append(got, entryString(e))
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("parseConfig(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestDangerous(t *testing.T) {
	e := func(sec, sub, name, value string) configEntry {
		return configEntry{Section: sec, Sub: sub, HasSub: sub != "", Name: name, Value: value}
	}
	tests := []struct {
		e    configEntry
		want string
	}{
		{e("core", "", "fsmonitor", "x"), "core.fsmonitor"},
		{e("core", "", "hookspath", "h"), "core.hooksPath"},
		{e("core", "", "bare", "true"), ""},
		{e("core", "x", "fsmonitor", "x"), ""},
		{e("diff", "pdf", "textconv", "x"), "diff.*.textconv"},
		{e("diff", "", "external", "x"), "diff.external"},
		{e("diff", "", "textconv", "x"), ""},
		{e("alias", "", "st", "status"), ""},
		{e("alias", "", "st", " !sh -c x"), "alias.*"},
		{e("credential", "", "helper", "store"), "credential.helper"},
		{e("credential", "https://h", "helper", "x"), "credential.*.helper"},
		{e("filter", "lfs", "process", "x"), "filter.*.process"},
		{e("gpg", "ssh", "defaultkeycommand", "x"), "gpg.ssh.defaultKeyCommand"},
		{e("gpg", "x509", "program", "x"), "gpg.*.program"},
		{e("url", "ext::sh -c x", "insteadof", "https://"), "url.*.*"},
		{e("submodule", "s", "update", "checkout"), ""},
		{e("submodule", "s", "update", "!sh"), "submodule.*.update"},
		{e("include", "", "path", "../x"), "include.path"},
		{e("includeif", "gitdir:/x", "path", "y"), "includeIf.*.path"},
		{e("sendemail", "", "tocmd", "x"), "sendemail.*"},
		{e("sendemail", "work", "cccmd", "x"), "sendemail.*.*"},
		{e("sendemail", "", "smtpserver", "smtp.example.com"), ""},
		{e("sendemail", "", "smtpserver", "/usr/bin/x"), "sendemail.*"},
		{e("remote", "origin", "url", "x"), ""},
		{e("remote", "origin", "uploadpack", "x"), "remote.*.uploadpack"},
		{e("extensions", "", "worktreeconfig", "true"), "extensions.worktreeConfig"},
		{e("pager", "", "log", "x"), "pager.*"},
	}
	for _, tt := range tests {
		t.Run(tt.e.Key(), func(t *testing.T) {
			if got := dangerous(tt.e); got != tt.want {
				t.Errorf("dangerous(%s=%q) = %q, want %q", tt.e.Key(), tt.e.Value, got, tt.want)
			}
		})
	}
}

// TestDangerousTable checks the table itself: every pattern has two or
// three parts and a section and name.
func TestDangerousTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range dangerousKeys {
		parts := strings.Split(r.pattern, ".")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[len(parts)-1] == "" || seen[r.pattern] {
			t.Errorf("bad or duplicate pattern %q", r.pattern)
		}
		seen[r.pattern] = true
	}
}

func TestCommentOut(t *testing.T) {
	tests := []struct {
		name string
		in   string
		keys []string // keys to comment out
		want string
	}{
		{"one key", "[core]\n\tbare = false\n\tfsmonitor = x\n[user]\n\tname = n\n", []string{"core.fsmonitor"},
			"[core]\n\tbare = false\n# cordon-disarmed: \tfsmonitor = x\n[user]\n\tname = n\n"},
		{"continuation lines", "[core]\n\tpager = a \\\n b \\\n c\n\tbare = true\n", []string{"core.pager"},
			"[core]\n# cordon-disarmed: \tpager = a \\\n# cordon-disarmed:  b \\\n# cordon-disarmed:  c\n\tbare = true\n"},
		{"crlf kept", "[core]\r\n\tfsmonitor = x\r\n\tbare = true\r\n", []string{"core.fsmonitor"},
			"[core]\r\n# cordon-disarmed: \tfsmonitor = x\r\n\tbare = true\r\n"},
		{"key after header", "[core] fsmonitor = x\n\tbare = true\n", []string{"core.fsmonitor"},
			"[core] \n# cordon-disarmed: fsmonitor = x\n\tbare = true\n"},
		{"no final newline", "[a]\n\tx = 1\n[alias]\n\ty = !sh", []string{"alias.y"},
			"[a]\n\tx = 1\n[alias]\n# cordon-disarmed: \ty = !sh"},
		{"two keys", "[core]\n\teditor = e\n\tpager = p\n", []string{"core.editor", "core.pager"},
			"[core]\n# cordon-disarmed: \teditor = e\n# cordon-disarmed: \tpager = p\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sel []configEntry
			for _, e := range parseConfig([]byte(tt.in)) {
				for _, k := range tt.keys {
					if e.Key() == k {
						sel = append(sel, e)
					}
				}
			}
			got := string(commentOut([]byte(tt.in), sel))
			if got != tt.want {
				t.Errorf("commentOut:\n got %q\nwant %q", got, tt.want)
			}
			for _, e := range parseConfig([]byte(got)) {
				for _, k := range tt.keys {
					if e.Key() == k {
						t.Errorf("%s still parses after commenting out: %q", k, got)
					}
				}
			}
		})
	}
}
