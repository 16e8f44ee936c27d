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

// mergedKeys are the git configuration keys that a git command inside the
// sandbox may set in a repository's config and that cordon writes into the
// host's config after the run (see MergeConfig): who the user is, the
// remotes a repository fetches from and pushes to, what a branch tracks,
// and the submodules it has; none runs a program. A URL is taken only when
// git would not hand it to a transport program (ext::, fd::, a remote
// helper's name::) and cannot be read as an option; a submodule's update
// only as one of git's own modes. Every other key is refused: the list is
// of what is safe, the dangerousKeys table says why a key is not.
var mergedKeys = []keyRule{
	{pattern: "user.name"},
	{pattern: "user.email"},
	{pattern: "remote.*.url", when: plainURL},
	{pattern: "remote.*.pushurl", when: plainURL},
	{pattern: "remote.*.fetch"},
	{pattern: "remote.*.push"},
	{pattern: "remote.*.tagopt"},
	{pattern: "remote.*.prune"},
	{pattern: "remote.*.pruneTags"},
	{pattern: "remote.*.mirror"},
	{pattern: "remote.*.skipDefaultUpdate"},
	{pattern: "branch.*.remote", when: plainURL},
	{pattern: "branch.*.pushRemote", when: plainURL},
	{pattern: "branch.*.merge"},
	{pattern: "branch.*.rebase"},
	{pattern: "branch.*.description"},
	{pattern: "submodule.*.url", when: plainURL},
	{pattern: "submodule.*.active"},
	{pattern: "submodule.*.branch"},
	{pattern: "submodule.*.ignore"},
	{pattern: "submodule.*.fetchRecurseSubmodules"},
	{pattern: "submodule.*.shallow"},
	{pattern: "submodule.*.update", when: updateMode},
}

// plainURL holds for a URL or path git fetches from itself: no
// "transport::address" form (which runs git-remote-TRANSPORT, or with
// ext:: any command), nothing git could take for an option, no control
// characters.
func plainURL(_, value string) bool {
	v := strings.TrimSpace(value)
	if v == "" || strings.Contains(v, "::") || strings.HasPrefix(v, "-") || strings.HasPrefix(v, "!") {
		return false
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// updateMode holds for git's own submodule update modes (not "!command").
func updateMode(_, value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "checkout", "rebase", "merge", "none":
		return true
	}
	return false
}

// dangerous returns the pattern of the first rule of dangerousKeys that
// matches e, or "".
func dangerous(e gitconfig.Entry) string { return matchKey(dangerousKeys, e) }

// merged returns the pattern of the first rule of mergedKeys that matches
// e, or "".
func merged(e gitconfig.Entry) string { return matchKey(mergedKeys, e) }

// mergedName reports whether a rule of mergedKeys names e's key, whatever
// its value: a key the run removed.
func mergedName(e gitconfig.Entry) bool {
	for _, r := range mergedKeys {
		r.when = nil
		if matchKey([]keyRule{r}, e) != "" {
			return true
		}
	}
	return false
}

// matchKey returns the pattern of the first of rules that matches e, or "".
func matchKey(rules []keyRule, e gitconfig.Entry) string {
	for _, r := range rules {
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
