package ask

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/audit"
	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/policy"
)

// outside is the decision on a file outside every read path.
var outside = policy.Decision{Denied: true, Rule: "filesystem.read: not listed", Fix: "--allow-read /h/notes.txt"}

// TestAskable: only what no rule names is asked about.
func TestAskable(t *testing.T) {
	for _, tc := range []struct {
		q    Question
		want bool
	}{
		{Question{Kind: Net, Host: "a.test", Port: 80, Rule: netrule.RuleNoAllow}, true},
		{Question{Kind: Net, Host: "a.test", Port: 80, Rule: "a.test"}, false},              // a deny entry
		{Question{Kind: Net, Host: "10.0.0.1", Port: 80, Rule: "private address"}, false},   // a special address
		{Question{Kind: Net, Host: "169.254.169.254", Port: 80, Rule: "link-local"}, false}, // metadata
		{Question{Kind: FileRead, Path: "/h/notes.txt", Decision: outside}, true},
		{Question{Kind: FileRead, Path: "/h/.ssh/id_rsa", Decision: policy.Decision{Denied: true, Secret: true, Rule: "filesystem.deny: /h/.ssh"}}, false},
		{Question{Kind: FileWrite, Path: "/w/.git/hooks/x", Decision: policy.Decision{Denied: true, Rule: "protected: **/.git/hooks/"}}, false},
		{Question{Kind: FileWrite, Path: "/usr/bin/x", Decision: policy.Decision{Denied: true, Rule: "filesystem.write: not listed (read-only)"}}, false}, // no fix: a system directory
		{Question{Kind: "file-exec", Path: "/x", Decision: outside}, false},
	} {
		if got := Askable(tc.q); got != tc.want {
			t.Errorf("Askable(%+v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

// script answers each question with the next of keys (0: no answer) and
// keeps the lines it was shown.
type script struct {
	keys  []byte
	lines []string
}

func (s *script) Prompt(ctx context.Context, line, keys string, timeout time.Duration) (byte, bool) {
	s.lines = append(s.lines, line)
	k := s.keys[0]
	s.keys = s.keys[1:]
	return k, k != 0
}

// TestSessionAnswers: each answer lets the access through or not, is
// recorded, is remembered for the run unless it was "once", and "for
// this workspace" is saved in the user config; a question that is not
// askable is never shown.
func TestSessionAnswers(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config", "cordon", "config.yaml")
	var recs []audit.Record
	p := &script{keys: []byte{'o', 'o', 'd', 0, 'w'}}
	s := &Session{Prompter: p, ConfigPath: cfg, Workspace: "/w", Never: []string{"/state/cordon"}, SessionID: "S", Command: "curl", Mode: "standard",
		Audit: func(r audit.Record) error { recs = append(recs, r); return nil }, Warn: func(m string) { t.Errorf("warning: %s", m) }}
	q := func(host string) Question {
		return Question{Kind: Net, Host: host, Port: 443, Rule: netrule.RuleNoAllow}
	}
	ctx := context.Background()
	for _, step := range []struct {
		q      Question
		want   bool
		asked  bool
		action string
		rule   string
	}{
		{q("once.test"), true, true, "allowed", "asked: once"},
		{q("once.test"), true, true, "allowed", "asked: once"}, // once is not remembered
		{q("deny.test"), false, true, "denied", "asked: deny"},
		{q("deny.test"), false, false, "", ""}, // remembered
		{q("late.test"), false, true, "denied", "asked: no answer"},
		{q("ws.test"), true, true, "allowed", "asked: for this workspace"},
		{q("ws.test"), true, false, "", ""},
		{Question{Kind: Net, Host: "10.0.0.1", Port: 1, Rule: "private address"}, false, false, "", ""},
		{Question{Kind: FileRead, Path: "/state/cordon/audit.jsonl", Decision: outside}, false, false, "", ""}, // Never
	} {
		n, r := len(p.lines), len(recs)
		if got := s.Ask(ctx, step.q); got != step.want {
			t.Errorf("Ask(%s) = %v, want %v", step.q.Target(), got, step.want)
		}
		if asked := len(p.lines) > n; asked != step.asked {
			t.Errorf("Ask(%s) asked: %v, want %v", step.q.Target(), asked, step.asked)
		}
		if !step.asked {
			continue
		}
		if len(recs) != r+1 || recs[r].Action != step.action || recs[r].Rule != step.rule || recs[r].Host != step.q.Host ||
			recs[r].Port != 443 || recs[r].Operation != "network-connect" || recs[r].SessionID != "S" || recs[r].Mode != "standard" {
			t.Errorf("Ask(%s): records %+v, want one %s %q", step.q.Target(), recs[r:], step.action, step.rule)
		}
	}
	if want := "cordon: allow network connection to once.test:443? [o]nce / [w]orkspace / [d]eny (deny in 30s) "; p.lines[0] != want {
		t.Errorf("line %q, want %q", p.lines[0], want)
	}
	l, err := config.ParseFile(cfg, config.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Workspaces) != 1 || l.Workspaces[0].Path != "/w" || !slices.Equal(l.Workspaces[0].Layer.Network.Allow, []string{"ws.test:443"}) {
		t.Errorf("saved %+v", l.Workspaces)
	}
}

// TestSaveWorkspace: an answer is added under its workspace, the rest of
// the file (comments, other workspaces, settings) kept, its mode kept,
// once only; a file inside a writable root (also through a link) or one
// that does not parse is left as it is.
func TestSaveWorkspace(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cordon", "config.yaml")
	orig := "# my cordon settings\nsandbox:\n  timeout: 90s # long builds\nworkspaces:\n  /other:\n    network: {allow: [\"x.test:1\"]}\n"
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(orig), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Question{
		{Kind: Net, Host: "a.test", Port: 8080},
		{Kind: FileRead, Path: "/h/notes.txt"},
		{Kind: FileWrite, Path: "/h/out"},
		{Kind: Net, Host: "a.test", Port: 8080},
	} {
		if err := SaveWorkspace(cfg, "/w", q, []string{"/w"}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(cfg)
	got := string(b)
	for _, want := range []string{"# my cordon settings", "timeout: 90s # long builds", "/other:", "x.test:1"} {
		if !strings.Contains(got, want) {
			t.Errorf("lost %q:\n%s", want, got)
		}
	}
	l, err := config.Parse(cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if l.Timeout == nil || len(l.Workspaces) != 2 || l.Workspaces[1].Path != "/w" {
		t.Fatalf("parsed %+v", l)
	}
	w := l.Workspaces[1].Layer
	if !slices.Equal(w.Network.Allow, []string{"a.test:8080"}) || !slices.Equal(w.Filesystem.Read, []string{"/h/notes.txt"}) || !slices.Equal(w.Filesystem.Write, []string{"/h/out"}) {
		t.Errorf("saved %+v", w)
	}
	if fi, _ := os.Stat(cfg); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if ents, _ := os.ReadDir(filepath.Dir(cfg)); len(ents) != 1 {
		t.Errorf("left beside it: %v", ents)
	}

	// Refused: inside a writable root, directly and through a link.
	ws := filepath.Join(dir, "ws")
	inside := filepath.Join(ws, "xdg", "cordon", "config.yaml")
	link := filepath.Join(dir, "link")
	if err := os.MkdirAll(filepath.Dir(inside), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "xdg"), link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{inside, filepath.Join(link, "cordon", "config.yaml")} {
		err := SaveWorkspace(p, ws, Question{Kind: Net, Host: "a.test", Port: 1}, []string{ws})
		if err == nil || !strings.Contains(err.Error(), "which the sandbox may write") {
			t.Errorf("SaveWorkspace(%s) = %v, want refused", p, err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// Refused: a file that does not parse is left as it is.
	bad := []byte("sandbox: {mode: sideways}\n")
	if err := os.WriteFile(cfg, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := SaveWorkspace(cfg, "/w", Question{Kind: Net, Host: "a.test", Port: 1}, nil); err == nil {
		t.Error("saved into a config with an error")
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, bad) {
		t.Errorf("changed to %q", b)
	}
}

// TestSaveWorkspaceConcurrent: answers saved at once into one user
// config, by many savers (each its own open file description, as many
// processes), all land: each reads, changes and renames under the lock
// of the config's directory, none overwrites another's answer.
func TestSaveWorkspaceConcurrent(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "cordon", "config.yaml")
	const n = 24
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			q := Question{Kind: Net, Host: fmt.Sprintf("h%d.test", i), Port: 443}
			if i%2 == 1 {
				q = Question{Kind: FileWrite, Path: fmt.Sprintf("/h/out%d", i)}
			}
			errs <- SaveWorkspace(cfg, "/w", q, nil)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	l, err := config.ParseFile(cfg, config.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Workspaces) != 1 {
		t.Fatalf("workspaces %+v", l.Workspaces)
	}
	w := l.Workspaces[0].Layer
	if got := len(w.Network.Allow) + len(w.Filesystem.Write); got != n {
		t.Errorf("%d of %d answers saved: network %v, write %v", got, n, w.Network.Allow, w.Filesystem.Write)
	}
}

// TestConsole: while a question is on screen, the command's output waits
// and what is typed answers it (only a key it knows; upper case counts),
// not the command; before and after, typing goes to the command.
func TestConsole(t *testing.T) {
	var out syncBuf
	c := &Console{}
	c.SetOut(&out)
	if got := c.Input([]byte("ls\r")); string(got) != "ls\r" {
		t.Errorf("Input with no question = %q", got)
	}
	done := make(chan byte)
	go func() {
		k, _ := c.Prompt(context.Background(), "Q? ", "owd", 5*time.Second)
		done <- k
	}()
	for !strings.Contains(out.String(), "Q? ") {
		time.Sleep(time.Millisecond)
	}
	wrote := make(chan struct{})
	go func() {
		_, _ = c.Write([]byte("OUTPUT"))
		close(wrote)
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-wrote:
		t.Error("the command's output went out during the question")
	default:
	}
	if got := c.Input([]byte("xW")); len(got) != 0 {
		t.Errorf("Input during the question passed on %q", got)
	}
	if k := <-done; k != 'w' {
		t.Errorf("answer %q, want w", k)
	}
	<-wrote
	if got := out.String(); got != "\r\nQ? w\r\nOUTPUT" {
		t.Errorf("terminal shows %q", got)
	}
	if k, ok := c.Prompt(context.Background(), "Q2? ", "owd", 20*time.Millisecond); ok || k != 0 {
		t.Errorf("no answer = %q, %v", k, ok)
	}
	if !strings.HasSuffix(out.String(), "Q2? (no answer: denied)\r\n") {
		t.Errorf("terminal shows %q", out.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
