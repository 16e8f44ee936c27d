package toolenv

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// gitRemotes adds the hosts of the workspace repository's remotes (the
// url and pushurl of each [remote "NAME"], rewritten by insteadOf and
// pushInsteadOf as git rewrites them) that the host side knows too. The
// remotes live in the repository's .git/config, a file inside the
// workspace: every sandbox keeps it read-only, but the agent's own file
// tools, an unconfined run or an unpacked archive may have written it,
// and a file in the workspace may only tighten the policy. So a remote
// adds its host only when a file outside the workspace names that host:
// ~/.ssh/known_hosts or /etc/ssh/ssh_known_hosts (for an ssh remote:
// you connected to it from the host), a url, credential or http section
// of your git config, or another registry found here. The other remotes
// are listed in Unlisted with the flag that allows them.
func (c *collector) gitRemotes() {
	if c.h.GitCommonDir == "" {
		return
	}
	data, err := config.ReadFile(filepath.Join(c.h.GitCommonDir, "config"), config.ReadOptions{NoFollow: true})
	if err != nil {
		return
	}
	repo := parseGitConfig(data)
	var host []gitSetting
	for _, f := range []string{"/etc/gitconfig", filepath.Join(c.h.Home, ".gitconfig"), filepath.Join(c.configHome(), "git", "config")} {
		if c.inWorkspace(f) {
			continue // a home that is the workspace: no confirmation
		}
		host = append(host, parseGitConfig(c.readFile(f))...)
	}
	known := hostSideGitHosts(host)
	all := append(host, repo...)
	for _, s := range repo {
		if s.section != "remote" || (s.key != "url" && s.key != "pushurl") {
			continue
		}
		raw := rewriteGitURL(s.value, all, s.key == "pushurl")
		h, port, ok := gitURLHost(raw)
		if !ok {
			continue
		}
		entry := hostPort(h, port)
		if c.regs.seen[entry] {
			continue
		}
		source := "git: remote " + s.sub + " (" + s.key + ") of the workspace's repository"
		if why := c.confirmHost(h, port, raw, known); why != "" {
			c.allowRemote(entry, source+"; "+why, true)
			continue
		}
		c.unlisted(entry, source, "the remote is written in the repository's .git/config, which may only tighten the policy, and no file outside the workspace names "+h+" (~/.ssh/known_hosts for ssh, a url, credential or http section of your git config); allow it with --allow-net "+entry)
	}
}

// confirmHost says which host-side file names host (as an ssh server for
// an ssh URL), or "".
func (c *collector) confirmHost(h, port, raw string, known []string) string {
	for _, k := range known {
		if ok, _ := path.Match(k, h); ok {
			return "your git config names " + h
		}
	}
	for e := range c.regs.seen {
		if eh, _, ok := strings.Cut(e, ":"); ok && eh == h && !strings.HasPrefix(e, "[") {
			return h + " is allowed for another tool"
		}
	}
	if isSSHURL(raw) {
		if f := c.knownHost(h, port); f != "" {
			return h + " is in " + c.short(f)
		}
	}
	return ""
}

// gitSetting is one key of a git config file, as gitremote uses it.
type gitSetting struct {
	section, sub, key, value string
}

// parseGitConfig reads a git config file with the one git-config
// parser (a bare key is "true"). A file git refuses sets nothing: git
// fails there, reaching no remote. Includes are not followed.
func parseGitConfig(data []byte) []gitSetting {
	es, err := gitconfig.Parse(data)
	if err != nil {
		return nil
	}
	out := make([]gitSetting, 0, len(es))
	for _, e := range es {
		out = append(out, gitSetting{e.Section, e.Sub, e.Name, e.ValueOrTrue()})
	}
	return out
}

// rewriteGitURL applies the longest url.BASE.insteadOf prefix (for a
// push URL, pushInsteadOf first) to raw, as git does.
func rewriteGitURL(raw string, settings []gitSetting, push bool) string {
	best, base := "", ""
	for _, key := range []string{"pushinsteadof", "insteadof"} {
		if key == "pushinsteadof" && !push {
			continue
		}
		for _, s := range settings {
			if s.section == "url" && s.key == key && strings.HasPrefix(raw, s.value) && len(s.value) > len(best) {
				best, base = s.value, s.sub
			}
		}
		if best != "" {
			return base + raw[len(best):]
		}
	}
	return raw
}

// hostSideGitHosts returns the hosts (path.Match patterns, as http
// sections allow "*.example.com") that the host's git config names: the
// URLs of its url, credential and http sections and insteadOf values.
func hostSideGitHosts(settings []gitSetting) []string {
	var hosts []string
	add := func(raw string) {
		if h, _, ok := gitURLHost(raw); ok {
			hosts = append(hosts, h)
		}
	}
	for _, s := range settings {
		switch s.section {
		case "url":
			add(s.sub)
			if s.key == "insteadof" || s.key == "pushinsteadof" {
				add(s.value)
			}
		case "credential", "http":
			add(s.sub)
		}
	}
	return hosts
}

// isSSHURL reports whether a git URL goes over ssh (ssh://, git+ssh://,
// or the scp-like user@host:path).
func isSSHURL(raw string) bool {
	scheme, _, ok := strings.Cut(raw, "://")
	if ok {
		return scheme == "ssh" || scheme == "git+ssh" || scheme == "ssh+git"
	}
	return scpLike(raw)
}

// scpLike reports whether raw is git's scp-like ssh syntax,
// [user@]host:path, whose host part has no slash.
func scpLike(raw string) bool {
	colon := strings.IndexByte(raw, ':')
	slash := strings.IndexByte(raw, '/')
	return colon > 0 && (slash < 0 || colon < slash)
}

// gitURLHost returns the host and port a git URL connects to; ok is
// false for a local path or file:// URL.
func gitURLHost(raw string) (string, string, bool) {
	if _, _, ok := strings.Cut(raw, "://"); ok {
		raw = strings.Replace(strings.Replace(raw, "git+ssh://", "ssh://", 1), "ssh+git://", "ssh://", 1)
		if e, ok, _ := urlEntry(raw); ok {
			i := strings.LastIndexByte(e, ':')
			return strings.Trim(e[:i], "[]"), e[i+1:], true
		}
		// A pattern such as https://*.example.com: url.Parse takes it.
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" && u.Scheme != "file" {
			return strings.ToLower(u.Hostname()), u.Port(), true
		}
		return "", "", false
	}
	if !scpLike(raw) {
		return "", "", false
	}
	host, _, _ := strings.Cut(raw, ":")
	if _, after, ok := strings.Cut(host, "@"); ok {
		host = after
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return "", "", false
	}
	return strings.ToLower(host), "22", true
}

// knownHost returns the known_hosts file that lists host (on port) as
// an ssh server, or "". Hashed entries (|1|salt|hash) are checked with
// the host's HMAC-SHA1, wildcards with path.Match; a line whose negated
// pattern matches, or marked @revoked, does not count.
func (c *collector) knownHost(host, port string) string {
	name := host
	if port != "22" {
		name = "[" + host + "]:" + port
	}
	files := []string{
		filepath.Join(c.h.Home, ".ssh", "known_hosts"),
		filepath.Join(c.h.Home, ".ssh", "known_hosts2"),
		"/etc/ssh/ssh_known_hosts",
		"/etc/ssh/ssh_known_hosts2",
	}
	for _, f := range files {
		if c.inWorkspace(f) {
			continue
		}
		data, err := config.ReadFile(f, config.ReadOptions{})
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
				continue
			}
			if strings.HasPrefix(fields[0], "@") {
				if fields[0] == "@revoked" || len(fields) < 2 {
					continue
				}
				fields = fields[1:]
			}
			if knownHostsLineMatches(fields[0], name) {
				return f
			}
		}
	}
	return ""
}

// knownHostsLineMatches reports whether the host patterns of a
// known_hosts line match name.
func knownHostsLineMatches(patterns, name string) bool {
	matched := false
	for _, p := range strings.Split(patterns, ",") {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		var ok bool
		if strings.HasPrefix(p, "|1|") {
			ok = hashedHostMatches(p, name)
		} else {
			ok, _ = path.Match(strings.ToLower(p), name)
		}
		if ok && neg {
			return false
		}
		matched = matched || ok
	}
	return matched
}

// hashedHostMatches checks a hashed known_hosts entry, |1|SALT|HASH
// (base64), against name: HASH is HMAC-SHA1(SALT, name).
func hashedHostMatches(entry, name string) bool {
	parts := strings.Split(entry, "|")
	if len(parts) != 4 {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[2])
	want, err2 := base64.StdEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil {
		return false
	}
	mac := hmac.New(sha1.New, salt)
	mac.Write([]byte(name))
	return hmac.Equal(mac.Sum(nil), want)
}
