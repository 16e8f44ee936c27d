//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlaceholdersNoClutter: in a fresh repository (git init), the agent's
// listing of the workspace shows nothing that is not on the host but the
// empty read-only directories of the editors and agents (which read a new
// one on the host without asking); no file name is a directory inside
// (`cat .profile` is "No such file", not "Is a directory"). An .envrc or a
// .mcp.json the command creates (their tools ask before trusting a new one)
// is not left armed on the host after the run, and a shell start-up file
// it creates is named in one warning. Both backends.
func TestPlaceholdersNoClutter(t *testing.T) {
	t.Parallel()
	dirsOK := []string{".vscode", ".idea", ".claude", ".cursor", ".codex", ".gemini"}
	for _, be := range []string{"bwrap", "landlock"} {
		t.Run(be, func(t *testing.T) {
			if be == "landlock" {
				requireLandlock(t)
			}
			e := newEnv(t)
			e.mustGit(e.ws, "init", "-q")
			r := e.sh(`for n in .* *; do [ -d "$n" ] && echo "d $n" || echo "f $n"; done; cat .profile`, "--backend", be)
			if !strings.Contains(r.stderr, ".profile: No such file") {
				t.Errorf("cat .profile inside: want No such file:\n%s", r)
			}
			var extra []string
			for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
				kind, n, _ := strings.Cut(l, " ")
				if n == "." || n == ".." || n == "*" || exists(filepath.Join(e.ws, n)) {
					continue
				}
				extra = append(extra, n)
				if kind != "d" || !slices.Contains(dirsOK, n) {
					t.Errorf("%s inside is not on the host and is no editor's or agent's directory (%s)", n, kind)
				}
			}
			t.Logf("%d entries inside that are not on the host: %q", len(extra), extra)

			r = e.sh(`echo 'echo ENVRC-RAN' > .envrc; echo '{"mcpServers":{"x":{"command":"sh"}}}' > .mcp.json; echo 'echo EVIL' > .profile; true`, "--backend", be)
			for _, n := range []string{".envrc", ".mcp.json"} {
				if exists(filepath.Join(e.ws, n)) {
					t.Errorf("%s the run created is left armed on the host:\n%s", n, r)
				}
			}
			if exists(filepath.Join(e.ws, ".profile")) && !strings.Contains(r.stderr, "cordon: warning: planted .profile") {
				t.Errorf(".profile created without a warning:\n%s", r)
			}
			for _, n := range []string{".envrc", ".mcp.json"} {
				if exists(filepath.Join(e.ws, n+".cordon-disarmed")) && !strings.Contains(r.stderr, "cordon: warning: planted "+n) {
					t.Errorf("%s disarmed without a warning:\n%s", n, r)
				}
			}
			ents, err := os.ReadDir(e.ws)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ents {
				if slices.Contains(dirsOK, d.Name()) {
					t.Errorf("placeholder %s left on the host", d.Name())
				}
			}
		})
	}
}

// TestPlaceholdersWhereToolsTrust: where the user's own settings make a
// tool trust a new .envrc or .mcp.json without asking (direnv's
// whitelist, Claude Code's enableAllProjectMcpServers; found by an attack:
// the host's shell or agent could load one while the run still lasts),
// the top of the workspace keeps an empty read-only file in its place:
// the run cannot create it, --explain says why, and nothing is left on
// the host after the run. Without those settings, no placeholder (see
// TestPlaceholdersNoClutter).
func TestPlaceholdersWhereToolsTrust(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".config", "direnv", "direnv.toml"), "[whitelist]\nprefix = [\""+e.home+"\"]\n")
	writeFile(t, filepath.Join(e.home, ".claude", "settings.json"), `{"enableAllProjectMcpServers": true}`)
	r := e.sh(`for n in .envrc .mcp.json; do [ -f $n ] && [ ! -s $n ] && echo "empty $n"; echo x > $n || echo "refused $n"; done`, "--backend", "bwrap")
	for _, n := range []string{".envrc", ".mcp.json"} {
		if !strings.Contains(r.stdout, "empty "+n) || !strings.Contains(r.stdout, "refused "+n) {
			t.Errorf("%s inside: want an empty read-only file:\n%s", n, r)
		}
		if exists(filepath.Join(e.ws, n)) || exists(filepath.Join(e.ws, n+".cordon-disarmed")) {
			t.Errorf("%s is left on the host:\n%s", n, r)
		}
	}
	// The host's direnv during the run, as a shell sitting in the
	// workspace runs it at its next prompt: it would load a new .envrc
	// at once (the whitelist), so the run must not be able to make one.
	direnv := hostProgram(t, "direnv")
	marker, ready := filepath.Join(e.root, "ENVRC-RAN"), filepath.Join(e.ws, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := e.command(ctx, "run", "--backend", "bwrap", "--", "sh", "-c",
		`echo "touch `+marker+`" > .envrc; echo > ready; i=0; while [ -e ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(cmdTimeout); !exists(ready); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the command did not get ready: %s", stderr.String())
		}
	}
	dc := exec.Command(direnv, "exec", e.ws, "true")
	dc.Env = e.environ()
	out, _ := dc.CombinedOutput()
	if err := os.Remove(ready); err != nil {
		t.Fatal(err)
	}
	waitCode(t, cmd)
	if exists(marker) {
		t.Errorf("the host's direnv loaded an .envrc the run made while it lasted:\n%s\n%s", out, stderr.String())
	}
	x := e.run("policy", "--explain")
	for _, want := range []string{"[whitelist] prefix", "enableAllProjectMcpServers"} {
		if !strings.Contains(x.stdout+x.stderr, want) {
			t.Errorf("--explain does not say %q:\n%s", want, x)
		}
	}
}
