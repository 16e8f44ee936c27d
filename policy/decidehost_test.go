package policy

import (
	"strings"
	"testing"
)

// TestDecideHost: on the host, what only the sandbox has (its private
// /tmp, /proc, /dev, the helper's directory, the directories above an
// allowed path) is refused as not listed, with no Fix; everything else is
// Decide's verdict.
func TestDecideHost(t *testing.T) {
	h := newDecideHost(t)
	d := h.load(t, nil).Decider(h.home)
	for _, tc := range []struct {
		name string
		op   Op
		path string
		deny string // a part of the rule; "" when allowed
	}{
		{"proc", OpRead, "/proc/self/environ", "sandbox: /proc is the sandbox's own"},
		{"dev", OpWrite, "/dev/null", "filesystem.write: not listed (sandbox: /dev"},
		{"helper", OpRead, "/run/cordon/cordon-helper", "sandbox: /run/cordon"},
		{"tmp read", OpRead, "/tmp/x", "filesystem.read: not listed (private /tmp"},
		{"tmp write", OpWrite, "/tmp/x", "filesystem.write: not listed (private /tmp"},
		{"home listing", OpRead, h.home, "a directory above an allowed path"},
		{"root listing", OpRead, "/", "a directory above an allowed path"},
		{"secret", OpRead, h.home + "/.ssh/id_rsa", "filesystem.deny"},
		{"workspace read", OpRead, h.ws + "/a.go", ""},
		{"workspace write", OpWrite, h.ws + "/a.go", ""},
		{"system read", OpRead, "/usr/bin/env", ""},
	} {
		dec := d.DecideHost(tc.op, tc.path)
		if tc.deny == "" {
			if dec.Denied {
				t.Errorf("%s: denied by %q", tc.name, dec.Rule)
			}
			continue
		}
		if !dec.Denied || !strings.Contains(dec.Rule, tc.deny) {
			t.Errorf("%s: %+v, want denied by %q", tc.name, dec, tc.deny)
		}
		if strings.Contains(tc.deny, "sandbox") || strings.Contains(tc.deny, "private") || strings.Contains(tc.deny, "above") {
			if dec.Fix != "" {
				t.Errorf("%s: Fix %q for the sandbox's own tree", tc.name, dec.Fix)
			}
		}
	}
}

// TestDecideHostCreate: a new file whose directory is too broad to name
// (the home) is askable by its own path; a new lock file, an existing
// one, a protected name (absent or not), a secret glob, a git directory's entry, a system
// directory and the sandbox's own /tmp never are; an allowed path stays
// allowed.
func TestDecideHostCreate(t *testing.T) {
	h := newDecideHost(t)
	d := h.load(t, nil).Decider(h.home)
	for _, tc := range []struct {
		name, path, fix string
		allowed         bool
	}{
		{"new in the home", h.home + "/new.txt", "--allow-write " + h.home + "/new.txt", false},
		{"new in another project", h.home + "/other/new", "--allow-write " + h.home + "/other", false},
		{"a lock file", h.home + "/.gitconfig.lock", "", false},
		{"a lock file in another project", h.home + "/other/f.lock", "", false},
		{"shell rc absent", h.home + "/.zshrc", "", false},
		{"shell rc", h.home + "/.bashrc", "", false},
		{"secret glob", h.home + "/.env", "", false},
		{"new hook", h.ws + "/.git/hooks/post-commit", "", false},
		{"cordon's config dir", h.home + "/.config/cordon/new.yaml", "", false},
		{"system", "/usr/bin/new", "", false},
		{"private tmp", "/tmp/new", "", false},
		{"in the workspace", h.ws + "/new.go", "", true},
	} {
		dec := d.DecideHostCreate(tc.path)
		if dec.Denied == tc.allowed || dec.Fix != tc.fix || dec.Askable() != (tc.fix != "") {
			t.Errorf("%s: %+v, want fix %q (allowed %v)", tc.name, dec, tc.fix, tc.allowed)
		}
	}
}

// TestDecisionAskable: only a path outside every read or write path, for
// which a flag would be suggested, may be asked about (cordon run --ask).
func TestDecisionAskable(t *testing.T) {
	h := newDecideHost(t)
	d := h.load(t, nil).Decider(h.home)
	for _, tc := range []struct {
		name string
		op   Op
		path string
		want bool
	}{
		{"a file in the home", OpRead, h.home + "/notes.txt", true},
		{"another project", OpWrite, h.home + "/other/f", true},
		{"secret", OpRead, h.home + "/.ssh/id_rsa", false},
		{"secret glob", OpRead, h.home + "/other/.env", false},
		{"protected hook", OpWrite, h.ws + "/.git/hooks/pre-commit", false},
		{"git config", OpWrite, h.ws + "/.git/config", false},
		{"shell rc", OpWrite, h.home + "/.bashrc", false},
		{"cordon's config", OpWrite, h.home + "/.config/cordon/config.yaml", false},
		{"system", OpWrite, "/usr/bin/env", false},
		{"sandbox's own /tmp", OpRead, "/tmp/x", false},
		{"sandbox's own /proc", OpRead, "/proc/self/environ", false},
		{"allowed", OpRead, h.ws + "/src/a.go", false},
	} {
		dec := d.DecideHost(tc.op, tc.path)
		if got := dec.Askable(); got != tc.want {
			t.Errorf("%s: Askable() = %v, want %v (%+v)", tc.name, got, tc.want, dec)
		}
	}
}
