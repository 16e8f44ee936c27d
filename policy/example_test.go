//go:build linux || darwin

package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// Example loads the policy cordon run would use in a project (the
// development profile, for a fake home) and asks it about single
// accesses, as an agent host's own tools can: the decision names the rule
// that decides (and, for what the user may allow, Decision.Fix names the
// flag that would).
func Example() {
	home, err := os.MkdirTemp("", "example-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	ws := filepath.Join(home, "src", "proj")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		panic(err)
	}
	p, err := policy.Load(policy.Options{Host: policy.Host{Home: home, Cwd: ws}, Workspace: ws, SkipUserConfig: true})
	if err != nil {
		panic(err)
	}
	d := p.Decider(home)
	tilde := strings.NewReplacer(home, "~")
	for _, q := range []struct {
		op   policy.Op
		path string
	}{
		{policy.OpWrite, filepath.Join(ws, "main.go")},
		{policy.OpRead, filepath.Join(ws, ".env")},
		{policy.OpWrite, filepath.Join(ws, ".git", "hooks", "pre-commit")},
		{policy.OpWrite, filepath.Join(home, "notes.txt")},
	} {
		dec := d.Decide(q.op, q.path)
		verdict := "allowed by"
		if dec.Denied {
			verdict = "denied by"
		}
		fmt.Printf("%s %s: %s %s\n", q.op, tilde.Replace(q.path), verdict, tilde.Replace(dec.Rule))
	}
	// Output:
	// file-write ~/src/proj/main.go: allowed by filesystem.write: ~/src/proj
	// file-read ~/src/proj/.env: denied by filesystem.deny: **/.env
	// file-write ~/src/proj/.git/hooks/pre-commit: denied by protected: **/.git/hooks/
	// file-write ~/notes.txt: denied by filesystem.write: not listed
}
