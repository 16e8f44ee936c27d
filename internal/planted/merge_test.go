package planted

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// TestMergeConfig: what a run set or removed in its copy of a config
// reaches the host's only for the safe keys (user, remotes, branch
// tracking, submodules) with safe values; every key that runs a program
// (the dangerousKeys table, a transport URL, a submodule update command)
// and every key not on the list stays out and is reported with its rule;
// the host's own changes during the run and its other content are kept.
// inWS is the writable roots of TestMergeConfig's runs: /ws.
func inWS(p string) bool { return p == "/ws" || strings.HasPrefix(p, "/ws/") }

func TestMergeConfig(t *testing.T) {
	const orig = "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = /src\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
	// The host's user changed a key of their own meanwhile.
	const host = orig + "[user]\n\tname = Host\n"
	for _, tc := range []struct {
		name    string
		add     string // appended to orig in the copy
		edit    func(string) string
		applied []string // keys applied
		refused map[string]string
		has     []string // key=value the merged file has
		hasNot  []string
	}{
		{name: "git remote add", add: "[remote \"up\"]\n\turl = https://example.com/r.git\n\tfetch = +refs/heads/*:refs/remotes/up/*\n",
			applied: []string{"remote.up.url", "remote.up.fetch"}, has: []string{"remote.up.url=https://example.com/r.git", "user.name=Host", "core.bare=false"}},
		{name: "git config user.email", add: "[user]\n\temail = a@example.com\n", applied: []string{"user.email"}, has: []string{"user.email=a@example.com", "user.name=Host"}},
		{name: "git branch -u", add: "[branch \"topic\"]\n\tremote = origin\n\tmerge = refs/heads/main\n", applied: []string{"branch.topic.remote", "branch.topic.merge"}, has: []string{"branch.topic.merge=refs/heads/main"}},
		{name: "git submodule init", add: "[submodule \"lib\"]\n\tactive = true\n\turl = ../lib\n\tupdate = rebase\n", applied: []string{"submodule.lib.active", "submodule.lib.url", "submodule.lib.update"}, has: []string{"submodule.lib.url=../lib"}},
		{name: "git remote set-url", edit: func(s string) string { return strings.Replace(s, "url = /src", "url = /src2", 1) }, applied: []string{"remote.origin.url"},
			has: []string{"remote.origin.url=/src2", "remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*"}, hasNot: []string{"remote.origin.url=/src"}},
		{name: "git remote remove", edit: func(s string) string { return s[:strings.Index(s, "[remote")] }, applied: []string{"remote.origin.url", "remote.origin.fetch"}, hasNot: []string{"remote.origin.url=/src"}},
		{name: "keys that run programs", add: "[core]\n\tfsmonitor = touch x\n\thooksPath = h\n\tsshCommand = s\n[include]\n\tpath = ../c\n[includeIf \"gitdir:/\"]\n\tpath = ../c\n[alias]\n\tst = !sh\n[remote \"origin\"]\n\tuploadpack = u\n[url \"ext::sh -c x\"]\n\tinsteadOf = https://\n[submodule \"lib\"]\n\tupdate = !sh\n[diff \"x\"]\n\ttextconv = t\n",
			refused: map[string]string{"core.fsmonitor": "planted:core.fsmonitor", "core.hookspath": "planted:core.hooksPath", "core.sshcommand": "planted:core.sshCommand", "include.path": "planted:include.path",
				"includeif.gitdir:/.path": "planted:includeIf.*.path", "alias.st": "planted:alias.*", "remote.origin.uploadpack": "planted:remote.*.uploadpack", "url.ext::sh -c x.insteadof": "planted:url.*.*",
				"submodule.lib.update": "planted:submodule.*.update", "diff.x.textconv": "planted:diff.*.textconv"},
			hasNot: []string{"core.fsmonitor=touch x"}},
		{name: "transport URLs and unknown keys", add: "[remote \"e\"]\n\turl = ext::sh -c touch% x\n[submodule \"s\"]\n\turl = -oProxyCommand=x\n[core]\n\tworktree = /elsewhere\n[user]\n\tsigningkey = k\n",
			refused: map[string]string{"remote.e.url": "not merged back", "submodule.s.url": "not merged back", "core.worktree": "not merged back", "user.signingkey": "not merged back"}},
		// A NUL ends git's key: remote."x.uploadpack\0".url is read by
		// git as remote.x.uploadpack, and submodule."s.update\0".branch
		// as submodule.s.update.
		{name: "a NUL in a subsection", add: "[remote \"x.uploadpack\x00\"]\n\turl = touch m\n[submodule \"s.update\x00\"]\n\tbranch = !sh\n",
			refused: map[string]string{"remote.x.uploadpack": "planted:remote.*.uploadpack", "submodule.s.update": "planted:submodule.*.update"}, hasNot: []string{"remote.x.uploadpack=touch m"}},
		{name: "a control character in a subsection", add: "[remote \"x\x01y\"]\n\turl = https://ok\n", refused: map[string]string{"remote.x\x01y.url": "not merged back"}},
		// A repository the run could write, named as a remote: git runs
		// its hooks on a push there.
		{name: "a remote in a writable root", add: "[remote \"x\"]\n\turl = /ws/zzz/evil.git\n\tpushurl = file:///ws/e.git\n[branch \"main\"]\n\tpushRemote = ../ws/e.git\n[submodule \"s\"]\n\turl = sub/e.git\n",
			refused: map[string]string{"remote.x.url": "local:a repository the run could write", "remote.x.pushurl": "local:a repository the run could write",
				"branch.main.pushremote": "local:a repository the run could write", "submodule.s.url": "local:a repository the run could write"}},
		{name: "remotes elsewhere", add: "[remote \"y\"]\n\turl = /srv/y.git\n\tpushurl = git@example.com:o/r.git\n[branch \"main\"]\n\tremote = y\n",
			applied: []string{"remote.y.url", "remote.y.pushurl", "branch.main.remote"}},
		{name: "a branch's remote as a transport", add: "[branch \"main\"]\n\tremote = ext::sh -c touch% x\n\tpushRemote = -oProxyCommand=x\n",
			refused: map[string]string{"branch.main.remote": "not merged back", "branch.main.pushremote": "not merged back"}},
		{name: "a safe key with an unsafe value beside it", add: "[remote \"m\"]\n\turl = https://ok\n\turl = ext::x\n", refused: map[string]string{"remote.m.url": "not merged back"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := orig + tc.add
			if tc.edit != nil {
				cp = tc.edit(cp)
			}
			out, changes, err := MergeConfig([]byte(orig), []byte(cp), []byte(host), "/ws", inWS)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var applied []string
			for _, c := range changes {
				if c.Applied {
					applied = append(applied, c.Key)
				} else {
					got[c.Key] = c.Rule
				}
			}
			if strings.Join(applied, " ") != strings.Join(tc.applied, " ") {
				t.Errorf("applied %q, want %q", applied, tc.applied)
			}
			for k, r := range tc.refused {
				if got[k] != r {
					t.Errorf("%s: rule %q, want %q (all: %q)", k, got[k], r, got)
				}
			}
			if len(got) != len(tc.refused) {
				t.Errorf("refused %q, want %q", got, tc.refused)
			}
			es, err := gitconfig.Parse(out)
			if err != nil {
				t.Fatalf("the merged file does not parse: %v\n%s", err, out)
			}
			kv := map[string]bool{}
			for _, e := range es {
				kv[e.Key()+"="+e.Value] = true
			}
			for _, h := range append(tc.has, "user.name=Host") {
				if !kv[h] {
					t.Errorf("no %s in:\n%s", h, out)
				}
			}
			for _, h := range tc.hasNot {
				if kv[h] {
					t.Errorf("%s in:\n%s", h, out)
				}
			}
			for _, e := range es {
				if r := dangerous(e); r != "" {
					t.Errorf("the merged file has %s (%s):\n%s", e.Key(), r, out)
				}
			}
		})
	}
	if out, _, err := MergeConfig([]byte(orig), []byte("[core\n"), []byte(host), "/ws", inWS); err == nil || string(out) != host {
		t.Errorf("a copy git refuses: err %v, out %q", err, out)
	}
}

// TestMergeConfigBounded: a run that changed more keys than any git
// command writes has nothing merged (found by an attack: 20,000 keys took
// seconds, and the merge's cost grows faster than their number).
func TestMergeConfigBounded(t *testing.T) {
	const host = "[core]\n\tbare = false\n"
	var b strings.Builder
	b.WriteString(host)
	for i := range maxMergedKeys + 1 {
		fmt.Fprintf(&b, "[branch \"b%d\"]\n\tremote = origin\n", i)
	}
	out, changes, err := MergeConfig([]byte(host), []byte(b.String()), []byte(host), "/ws", inWS)
	if err == nil || string(out) != host || changes != nil {
		t.Errorf("MergeConfig of %d changed keys: err %v, %d changes, %d bytes out", maxMergedKeys+1, err, len(changes), len(out))
	}
}
