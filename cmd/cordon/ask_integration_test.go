//go:build linux

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// askBody is what the test server of the --ask tests answers.
const askBody = "ASKED-BODY-5d1e"

// askEnv is the fake machine of the --ask tests: a cordon built to read
// its own hosts file (name.test is the test server's 127.0.0.1), a tmux
// server of its own to be the person at the terminal, and the server.
type askEnv struct {
	*sandboxEnv
	cordon string
	tmux   []string // tmux with its socket
	port   int
}

func newAskEnv(t *testing.T) *askEnv {
	t.Helper()
	a := newTermEnv(t, newEnv(t))
	testenv.Tool(t, "curl", "apt-get install -y curl")
	a.cordon = cordonWithHosts(a.sandboxEnv, "127.0.0.1 name.test\n10.1.2.3 private.test\n")
	ln := testenv.Listen(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, askBody)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	a.port = ln.Addr().(*net.TCPAddr).Port
	return a
}

// newTermEnv is e with a tmux server of its own to be the person at the
// terminal, running the cordon under test.
func newTermEnv(t *testing.T, e *sandboxEnv) *askEnv {
	t.Helper()
	tmux := testenv.Tool(t, "tmux", "apt-get install -y tmux")
	a := &askEnv{sandboxEnv: e, cordon: cordonBin, tmux: []string{tmux, "-S", filepath.Join(e.root, "tmux.sock")}}
	t.Cleanup(func() { _ = exec.Command(a.tmux[0], append(a.tmux[1:], "kill-server")...).Run() })
	return a
}

// term runs cordon with args in a new tmux window (a terminal), and
// returns the window's name and the file its exit status is written to.
func (a *askEnv) term(t *testing.T, name string, args ...string) string {
	t.Helper()
	status := filepath.Join(a.root, name+".status")
	var q []string
	for _, s := range append([]string{a.cordon}, args...) {
		q = append(q, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	script := filepath.Join(a.root, name+".sh")
	env := ""
	for _, kv := range a.environ() {
		env += "export '" + kv + "'\n"
	}
	writeFile(t, script, fmt.Sprintf("cd '%s'\n%s%s\necho $? > '%s.tmp' && mv '%s.tmp' '%s'\nsleep 600\n",
		a.ws, env, strings.Join(q, " "), status, status, status))
	a.tmuxRun(t, "new-session", "-d", "-s", name, "-x", "220", "-y", "50", "sh "+script)
	return status
}

func (a *askEnv) tmuxRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(a.tmux[0], append(a.tmux[1:], args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is what window name shows.
func (a *askEnv) screen(t *testing.T, name string) string {
	return a.tmuxRun(t, "capture-pane", "-p", "-J", "-S", "-", "-t", name)
}

// waitFor waits until window name shows want, or fails.
func (a *askEnv) waitFor(t *testing.T, name, want string, d time.Duration) string {
	t.Helper()
	end := time.Now().Add(d)
	for {
		s := a.screen(t, name)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(end) {
			ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,wchan:24,args").Output()
			var ours []string
			for _, l := range strings.Split(string(ps), "\n") {
				if strings.Contains(l, a.root) || strings.Contains(l, "curl") {
					ours = append(ours, l[:min(len(l), 200)])
				}
			}
			panes, _ := exec.Command(a.tmux[0], append(a.tmux[1:], "list-panes", "-a", "-F", "#{session_name} pid #{pane_pid} dead #{pane_dead} #{pane_current_command}")...).CombinedOutput()
			st, _ := os.ReadFile(filepath.Join(a.root, name+".status"))
			t.Fatalf("window %s never showed %q; it shows:\n%s\nprocesses:\n%s\npanes:\n%s\nexit status file: %q", name, want, s, strings.Join(ours, "\n"), panes, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExit waits for the status file of a term command and returns the
// command's exit status.
func (a *askEnv) waitExit(t *testing.T, status string, d time.Duration) int {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if b, err := os.ReadFile(status); err == nil {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("status file %s: %q", status, b)
			}
			return n
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the command of %s did not end within %s", status, d)
	return -1
}

// audited returns the audit log's records about host.
func (a *askEnv) audited(host string) []audit.Record {
	var out []audit.Record
	recs, _, _ := audit.Read(filepath.Join(a.home, ".local", "state", "cordon", "audit.jsonl"), audit.Filter{})
	for _, r := range recs {
		if r.Host == host {
			out = append(out, r)
		}
	}
	return out
}

// TestAskNetwork: cordon run --ask holds a connection to a host no rule
// names while it asks at the terminal (driven in tmux); o lets this
// connection through, w lets it through and saves it in the user config
// under the workspace (the next run, without --ask and without a
// terminal, goes through unasked), d and no answer within 30 s refuse it
// with the refusal line; each answer is an audit record. A host a deny
// entry names and a private address are refused without a question, and
// --ask without a terminal is one cordon: line, exit 125.
func TestAskNetwork(t *testing.T) {
	t.Parallel()
	a := newAskEnv(t)
	url := fmt.Sprintf("http://name.test:%d/", a.port)
	target := fmt.Sprintf("name.test:%d", a.port)
	allowSrv := fmt.Sprintf("127.0.0.1:%d", a.port)
	question := "cordon: allow network connection to " + target + "? [o]nce / [w]orkspace / [d]eny (deny in 30s)"
	userConfig := filepath.Join(a.home, ".config", "cordon", "config.yaml")
	writeFile(t, userConfig, "# my settings\nsandbox:\n  audit:\n    enabled: true  # keep\n")
	for _, tc := range []struct {
		name, key string
		code      int
		rule      string
		saved     bool
	}{
		{"once", "o", 0, "asked: once", false},
		{"deny", "d", 22, "asked: deny", false},
		{"none", "", 22, "asked: no answer", false},
		{"workspace", "w", 0, "asked: for this workspace", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(a.audited("name.test"))
			status := a.term(t, tc.name, "run", "--ask", "--allow-net", allowSrv, "--", "curl", "-fsS", url)
			a.waitFor(t, tc.name, question, 60*time.Second)
			if tc.key != "" {
				a.tmuxRun(t, "send-keys", "-t", tc.name, tc.key)
			}
			code := a.waitExit(t, status, 90*time.Second)
			scr := a.screen(t, tc.name)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; screen:\n%s", code, tc.code, scr)
			}
			if got := strings.Contains(scr, askBody); got != (tc.code == 0) {
				t.Errorf("the body reached curl: %v, want %v; screen:\n%s", got, tc.code == 0, scr)
			}
			if tc.code != 0 && !strings.Contains(scr, "cordon: network: refused "+target+" (no allow rule)") {
				t.Errorf("no refusal line; screen:\n%s", scr)
			}
			recs := a.audited("name.test")[before:]
			if len(recs) == 0 || recs[0].Rule != tc.rule || recs[0].Port != a.port || recs[0].Operation != "network-connect" {
				t.Errorf("audit records %+v, want first with rule %q", recs, tc.rule)
			}
			cfg := readFile(t, userConfig)
			if got := strings.Contains(cfg, target); got != tc.saved {
				t.Errorf("user config holds %s: %v, want %v:\n%s", target, got, tc.saved, cfg)
			}
			if tc.saved {
				for _, want := range []string{"# my settings", "enabled: true # keep", a.ws + ":"} {
					if !strings.Contains(cfg, want) {
						t.Errorf("user config lost or lacks %q:\n%s", want, cfg)
					}
				}
				r := a.runBin(a.cordon, nil, "run", "--allow-net", allowSrv, "--", "curl", "-fsS", url)
				if r.code != 0 || !strings.Contains(r.stdout, askBody) {
					t.Errorf("the saved answer did not let the next run through: %s", r)
				}
			}
		})
	}
	t.Run("never askable", func(t *testing.T) {
		for i, args := range [][]string{
			{"--deny-net", "denied.test", "--", "curl", "-fsS", fmt.Sprintf("http://denied.test:%d/", a.port)},
			{"--", "curl", "-fsS", fmt.Sprintf("http://10.1.2.3:%d/", a.port)},
		} {
			name := "never" + strconv.Itoa(i)
			status := a.term(t, name, append([]string{"run", "--ask", "--allow-net", allowSrv}, args...)...)
			code := a.waitExit(t, status, 60*time.Second)
			if scr := a.screen(t, name); code == 0 || strings.Contains(scr, "cordon: allow") || !strings.Contains(scr, "cordon: network: refused") {
				t.Errorf("%v: exit %d, want a refusal without a question; screen:\n%s", args, code, scr)
			}
		}
	})
	t.Run("no terminal", func(t *testing.T) {
		r := a.runBin(a.cordon, nil, "run", "--ask", "--", "true")
		if r.code != 125 || !strings.Contains(r.stderr, "cordon: --ask needs a person at a terminal") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("--ask without a terminal: %s", r)
		}
	})
}

// TestAskFiles: on bubblewrap and the Landlock-only backend (its
// supervisor), cordon run --ask holds a read of a file outside the
// policy (~/notes.txt, which the sandbox does not show) while it asks at
// the terminal; o serves the host's file (the monitor opens it and hands
// the descriptor in), d fails the read with EACCES, w serves it and saves
// the path in the user config (the next run reads it unasked). A secret
// (~/.ssh/id_rsa, a deny entry) and a protected path (.git/hooks/,
// written in place) fail without a question.
func TestAskFiles(t *testing.T) {
	t.Parallel()
	a := newAskEnv(t)
	notes := filepath.Join(a.home, "notes.txt")
	writeFile(t, notes, "NOTES-7c1b\n")
	question := "cordon: allow reading " + notes + " by cat? [o]nce / [w]orkspace / [d]eny (deny in 30s)"
	userConfig := filepath.Join(a.home, ".config", "cordon", "config.yaml")
	for _, be := range []string{"landlock", "bwrap"} { // bwrap saves the answer last
		for _, tc := range []struct {
			name, key string
			code      int
			screen    string
			rule      string
			saved     bool
		}{
			{"once", "o", 0, "NOTES-7c1b", "asked: once", false},
			{"deny", "d", 1, "cat: " + notes + ": Permission denied", "asked: deny", false},
			{"workspace", "w", 0, "NOTES-7c1b", "asked: for this workspace", true},
		} {
			if tc.saved && be != "bwrap" {
				continue // saved once, by the bwrap run
			}
			win := be + tc.name
			t.Run(win, func(t *testing.T) {
				status := a.term(t, win, "run", "--ask", "--backend", be, "--", "cat", notes)
				a.waitFor(t, win, question, 60*time.Second)
				a.tmuxRun(t, "send-keys", "-t", win, tc.key)
				code := a.waitExit(t, status, 60*time.Second)
				scr := a.screen(t, win)
				if code != tc.code || !strings.Contains(scr, tc.screen) {
					t.Fatalf("exit %d, want %d and %q on the screen:\n%s", code, tc.code, tc.screen, scr)
				}
				var rec *audit.Record
				recs, _, _ := audit.Read(filepath.Join(a.home, ".local", "state", "cordon", "audit.jsonl"), audit.Filter{})
				for i := range recs {
					if recs[i].Path == notes {
						rec = &recs[i]
					}
				}
				if rec == nil || rec.Rule != tc.rule || rec.Operation != "file-read" {
					t.Errorf("last audit record of %s: %+v, want rule %q", notes, rec, tc.rule)
				}
				cfg, _ := os.ReadFile(userConfig)
				if got := strings.Contains(string(cfg), notes); got != tc.saved {
					t.Errorf("user config holds %s: %v, want %v:\n%s", notes, got, tc.saved, cfg)
				}
				if tc.saved {
					r := a.runBin(a.cordon, nil, "run", "--", "cat", notes)
					if r.code != 0 || !strings.Contains(r.stdout, "NOTES-7c1b") {
						t.Errorf("the saved answer did not let the next run read it: %s", r)
					}
				}
			})
		}
	}
	t.Run("never askable", func(t *testing.T) {
		writeFile(t, filepath.Join(a.home, ".ssh", "id_rsa"), "KEY-SECRET-91ab\n")
		hook := filepath.Join(a.ws, ".git", "hooks", "pre-commit")
		writeFile(t, hook, "#!/bin/sh\n")
		for i, argv := range [][]string{
			{"bwrap", "cat", filepath.Join(a.home, ".ssh", "id_rsa")},
			{"bwrap", "dd", "if=/dev/null", "of=" + hook, "conv=nocreat,notrunc", "status=none"},
			{"landlock", "cat", filepath.Join(a.home, ".ssh", "id_rsa")},
			{"landlock", "dd", "if=/dev/null", "of=" + hook, "conv=nocreat,notrunc", "status=none"},
		} {
			if argv[0] == "landlock" {
				requireLandlock(t)
			}
			name := "filenever" + strconv.Itoa(i)
			status := a.term(t, name, append([]string{"run", "--ask", "--backend", argv[0], "--"}, argv[1:]...)...)
			code := a.waitExit(t, status, 60*time.Second)
			if scr := a.screen(t, name); code == 0 || strings.Contains(scr, "cordon: allow") || strings.Contains(scr, "KEY-SECRET") {
				t.Errorf("%v: exit %d, want a refusal without a question; screen:\n%s", argv, code, scr)
			}
		}
	})
}

// TestAskRefusedWhereNotBuilt: cordon shell and cordon mcp do not ask at
// a terminal; --ask there is refused with one line, never taken and
// ignored.
func TestAskRefusedWhereNotBuilt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, sub := range []string{"shell", "mcp"} {
		r := e.run(sub, "--ask")
		if r.code != 125 || !strings.Contains(r.stderr, "drop --ask") || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("cordon %s --ask: %s", sub, r)
		}
	}
}

// TestAskFromConfigWithoutTerminal: on_violation: ask from the user's
// config, in a run with no terminal to ask on, refuses as block and says
// so in one note, rather than dropping the setting in silence.
func TestAskFromConfigWithoutTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	writeFile(t, filepath.Join(e.home, ".config", "cordon", "config.yaml"), "sandbox:\n  on_violation: ask\n")
	r := e.run("run", "--", "true")
	if r.code != 0 || strings.Count(r.stderr, "on_violation: ask refuses as block here") != 1 {
		t.Errorf("on_violation: ask without a terminal: %s", r)
	}
}
