package planted

import (
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

func TestDangerous(t *testing.T) {
	e := func(sec, sub, name, value string) gitconfig.Entry {
		return gitconfig.Entry{Section: sec, Sub: sub, HasSub: sub != "", Name: name, Value: value}
	}
	tests := []struct {
		e    gitconfig.Entry
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
