//go:build linux

package main

import "testing"

func TestDbg(t *testing.T) {
	e := newEnv(t)
	writeFile(t, e.ws+"/main.go", "package main\n")
	for _, a := range []string{`mkdir -p .cursor && echo x > .cursor/mcp.json`, `echo evil > .bashrc`} {
		r := e.sh("ls -la; " + a)
		t.Logf("%s", r)
	}
	r := e.run("policy", "--explain")
	t.Logf("%s", r.stdout)
}
