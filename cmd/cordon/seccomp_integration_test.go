//go:build linux

package main

import (
	"strings"
	"testing"
)

// TestSeccompInsideSandbox checks that the helper installs the seccomp
// filter last: the command sees it in /proc/self/status, and a new user
// namespace (the usual first step of a namespace escape) fails with EPERM.
func TestSeccompInsideSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		script string
		want   string
	}{
		{"status", "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status", "Seccomp:\t2"},
		{"new user namespace", "unshare -U true; echo rc=$?", "Operation not permitted"},
		{"new user namespace with mount", "unshare -Urm true 2>&1; echo rc=$?", "rc=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.sh(tc.script)
			if !strings.Contains(r.all(), tc.want) {
				t.Fatalf("want %q in output\n%s", tc.want, r)
			}
		})
	}
	// Outside the sandbox, the same unshare works: the denial above is the
	// filter's, not the host's.
	if r := e.sh("true", "--no-sandbox"); r.code != 0 {
		t.Fatalf("mode off: %s", r)
	}
}
