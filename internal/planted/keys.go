package planted

import (
	"strings"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// keyRule is one entry of dangerousKeys.
type keyRule struct {
	// pattern is "section.name" (no subsection) or "section.sub.name",
	// written as git documents it; "*" as sub matches any subsection and
	// "*" as name any name. Section and name compare case-insensitively,
	// a literal subsection exactly.
	pattern string
	// when, if set, must also hold for the (lower-cased) name and value.
	when func(name, value string) bool
}

// dangerousKeys are the git configuration keys through which git runs a
// program, loads more configuration, or lets a remote or a URL run one:
// a run that plants one of them in a repository's config makes the user's
// next git command there run the planted program on the host. The list
// follows git-config(1); it errs on the side of reporting (a planted
// url.*.insteadOf or protocol.allow only enables an ext:: transport, which
// then runs a program).
var dangerousKeys = []keyRule{
	{pattern: "core.fsmonitor"},
	{pattern: "core.hooksPath"},
	{pattern: "core.sshCommand"},
	{pattern: "core.pager"},
	{pattern: "core.editor"},
	{pattern: "core.askPass"},
	{pattern: "core.gitProxy"},
	{pattern: "core.alternateRefsCommand"},
	{pattern: "sequence.editor"},
	{pattern: "diff.external"},
	{pattern: "diff.*.command"},
	{pattern: "diff.*.textconv"},
	{pattern: "merge.*.driver"},
	{pattern: "filter.*.clean"},
	{pattern: "filter.*.smudge"},
	{pattern: "filter.*.process"},
	{pattern: "credential.helper"},
	{pattern: "credential.*.helper"},
	{pattern: "alias.*", when: bang},
	{pattern: "pager.*"},
	{pattern: "interactive.diffFilter"},
	{pattern: "gpg.program"},
	{pattern: "gpg.*.program"},
	{pattern: "gpg.ssh.defaultKeyCommand"},
	{pattern: "remote.*.uploadpack"},
	{pattern: "remote.*.receivepack"},
	{pattern: "remote.*.vcs"},
	{pattern: "protocol.allow"},
	{pattern: "protocol.*.allow"},
	{pattern: "url.*.*"},
	{pattern: "submodule.*.update", when: bang},
	{pattern: "include.path"},
	{pattern: "includeIf.*.path"},
	{pattern: "web.browser"},
	{pattern: "browser.*.cmd"},
	{pattern: "browser.*.path"},
	{pattern: "man.*.cmd"},
	{pattern: "man.*.path"},
	{pattern: "difftool.*.cmd"},
	{pattern: "difftool.*.path"},
	{pattern: "mergetool.*.cmd"},
	{pattern: "mergetool.*.path"},
	{pattern: "sendemail.*", when: sendemail},
	{pattern: "sendemail.*.*", when: sendemail},
	{pattern: "imap.tunnel"},
	{pattern: "tar.*.command"},
	{pattern: "trailer.*.command"},
	{pattern: "trailer.*.cmd"},
	{pattern: "guitool.*.cmd"},
	{pattern: "uploadpack.packObjectsHook"},
	{pattern: "extensions.worktreeConfig"},
}

// bang holds for a value that git runs as a shell command ("!cmd").
func bang(_, value string) bool { return strings.HasPrefix(strings.TrimSpace(value), "!") }

// sendemail holds for git send-email's command keys (tocmd, cccmd,
// headerCmd, sendmailCmd, ...) and an smtpServer that is a program path.
func sendemail(name, value string) bool {
	return strings.HasSuffix(name, "cmd") || name == "smtpserver" && strings.HasPrefix(strings.TrimSpace(value), "/")
}

// dangerous returns the pattern of the first rule that matches e, or "".
func dangerous(e gitconfig.Entry) string {
	for _, r := range dangerousKeys {
		parts := strings.Split(r.pattern, ".")
		sec, name := strings.ToLower(parts[0]), strings.ToLower(parts[len(parts)-1])
		if sec != e.Section || name != "*" && name != e.Name {
			continue
		}
		if len(parts) == 3 {
			if !e.HasSub || parts[1] != "*" && parts[1] != e.Sub {
				continue
			}
		} else if e.HasSub {
			continue
		}
		if r.when != nil && !r.when(e.Name, e.Value) {
			continue
		}
		return r.pattern
	}
	return ""
}
