package sandbox

import (
	"bytes"
	"context"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

func TestMain(m *testing.M) {
	// The test binary is also the helper inside the sandbox.
	Init()
	os.Exit(m.Run())
}

// fakeHost points HOME and the XDG directories at a temporary tree with a
// secret in it, and returns the workspace.
func fakeHost(t *testing.T) (home, ws string) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		testenv.SkipOrFail(t, "bubblewrap is not installed (apt-get install bubblewrap)")
	}
	h := testenv.FakeHome(t)
	if err := os.MkdirAll(filepath.Join(h.Dir, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.Dir, ".ssh", "id_rsa"), []byte("SECRET-KEY-31"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.Setenv(t)
	return h.Dir, h.Workspace
}

func TestRun(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	if sb.Backend() != "bwrap" {
		t.Errorf("backend %q", sb.Backend())
	}
	var out, errb bytes.Buffer
	cmd := exec.Command("sh", "-c", `echo hi; echo data > made; cat "$HOME/.ssh/id_rsa"; touch "$HOME/x"; exit 3`)
	cmd.Dir = ws
	cmd.Stdout, cmd.Stderr = &out, &errb
	res, err := sb.Run(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || out.String() != "hi\n" {
		t.Fatalf("exit %d stdout %q stderr %q", res.ExitCode, out.String(), errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "SECRET-KEY-31") || !strings.Contains(errb.String(), "Permission denied") {
		t.Errorf("secret not denied: %q", errb.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "made")); err != nil || string(b) != "data\n" {
		t.Errorf("workspace write: %q %v", b, err)
	}
	if res.Usage.Wall <= 0 {
		t.Errorf("usage not filled: %+v", res.Usage)
	}
	if _, err := sb.Run(context.Background(), cmd); err == nil {
		t.Error("running the same exec.Cmd twice must fail")
	}
}

func TestRunTimeout(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := sb.Run(context.Background(), exec.Command("sh", "-c", "sleep 30 & sleep 31"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 124 || time.Since(start) > 10*time.Second {
		t.Fatalf("timeout: %+v after %s", res, time.Since(start))
	}
}

func TestWrap(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws), WithWritePaths(ws))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(ws)
	var out bytes.Buffer
	cmd := exec.Command("sh", "-c", `echo wrapped; echo x > ok; touch /etc/cordon-x 2>&1; mkdir .vscode 2>&1; true`)
	cmd.Dir = ws
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := sb.Wrap(cmd); err != nil {
		t.Fatal(err)
	}
	if err := sb.Wrap(cmd); err == nil || !strings.Contains(err.Error(), "already wrapped") {
		t.Fatalf("second Wrap: %v", err)
	}
	if !strings.HasSuffix(cmd.Path, "bwrap") {
		t.Fatalf("Wrap did not rewrite the command: %s", cmd.Path)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "wrapped") || !strings.Contains(got, "Read-only file system") {
		t.Errorf("output %q", got)
	}
	if _, err := os.Stat("/etc/cordon-x"); err == nil {
		t.Error("a wrapped command wrote /etc")
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadDir(ws)
	if len(after) != len(before)+1 { // only "ok"
		var names []string
		for _, e := range after {
			names = append(names, e.Name())
		}
		t.Errorf("workspace after Close: %q (placeholders left?)", names)
	}
}

func TestNewErrors(t *testing.T) {
	home, ws := fakeHost(t)
	tests := []struct {
		name string
		opts []Option
		want string
	}{
		{"forward port below 1024", []Option{WithForwardPorts(80)}, "1024"},
		{"bad profile", []Option{WithProfile("nope")}, "nope"},
		{"relative workspace missing", []Option{WithWorkspace(filepath.Join(ws, "missing"))}, "missing"},
		{"bad network", []Option{WithNetwork(NetworkPolicy(9))}, "unknown network policy"},
		{"home workspace", []Option{WithWorkspace(home)}, "the workspace " + home + " is your home directory: "},
		{"ancestor of home", []Option{WithWorkspace(filepath.Dir(home))}, "is an ancestor of your home directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(append([]Option{WithWorkspace(ws)}, tc.opts...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExampleProgram(t *testing.T) {
	bin := buildExample(t)
	_, ws := fakeHost(t)
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, "-workspace", ws, "--", "sh", "-c", `cat "$HOME/.ssh/id_rsa"; echo fine > result.txt; exit 5`)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 5 {
		t.Fatalf("exit: %v\n%s", err, errb.String())
	}
	if strings.Contains(out.String()+errb.String(), "SECRET-KEY-31") || !strings.Contains(errb.String(), "backend bwrap") {
		t.Errorf("stderr %q", errb.String())
	}
	if b, err := os.ReadFile(filepath.Join(ws, "result.txt")); err != nil || string(b) != "fine\n" {
		t.Errorf("result.txt: %q %v", b, err)
	}
}

// TestExampleGoBuild: the library example of docs/library.md (examples/agenthost:
// the workspace writable, the tool caches, no network) runs a real go
// build and the program it built.
func TestExampleGoBuild(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.SkipOrFail(t, "no go toolchain on PATH")
	}
	bin := buildExample(t)
	home, ws := fakeHost(t)
	t.Setenv("PATH", filepath.Dir(goBin)+":/usr/bin:/bin")
	for name, body := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the sandbox\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(bin, append([]string{"-workspace", ws, "-timeout", "4m", "--"}, args...)...)
		cmd.Dir = ws
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("agenthost %q: %v\nstdout: %s\nstderr: %s", args, err, out.String(), errb.String())
		}
		return out.String()
	}
	run("go", "build", "-o", "hello", ".")
	if got := run("./hello"); got != "hello from the sandbox\n" {
		t.Errorf("the program built inside printed %q", got)
	}
	// The build wrote only the sandbox's own cache, not the host's.
	if _, err := os.Stat(filepath.Join(home, ".cache", "go-build")); err == nil {
		t.Errorf("the host's Go build cache was created by a build inside")
	}
}

// buildExample builds examples/agenthost with the real module and build
// caches, found before HOME is faked (a module cache under the test's
// temp dir is read-only and could not be cleaned up).
func buildExample(t *testing.T) string {
	t.Helper()
	goenv, err := exec.Command("go", "env", "GOMODCACHE", "GOCACHE").Output()
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skip("no go toolchain on PATH to build the example")
		}
		t.Fatalf("go env: %v", err)
	}
	caches := strings.Fields(string(goenv))
	if len(caches) != 2 {
		t.Fatalf("go env printed %q", goenv)
	}
	bin := filepath.Join(t.TempDir(), "agenthost")
	build := exec.Command("go", "build", "-o", bin, "../examples/agenthost")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOMODCACHE="+caches[0], "GOCACHE="+caches[1])
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example: %v\n%s", err, out)
	}
	return bin
}

// TestRunUsageCPU: Run's usage counts the command's CPU time once the host
// is a child subreaper (or a cgroup held the sandbox); otherwise it says
// the figure is incomplete. This test makes the test process a subreaper
// for the rest of its life, which the other tests do not mind.
func TestRunUsageCPU(t *testing.T) {
	_, ws := fakeHost(t)
	sb, err := New(WithWorkspace(ws))
	if err != nil {
		t.Fatal(err)
	}
	busy := func() *exec.Cmd {
		return exec.Command("sh", "-c", `i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`)
	}
	res, err := sb.Run(context.Background(), busy())
	if err != nil {
		t.Fatal(err)
	}
	// The loop costs well over 100 ms of CPU time however loaded the
	// machine is (other test packages run beside this one); uncounted,
	// the figure is a few milliseconds. Wall time says nothing under load.
	const counted = 50 * time.Millisecond
	cpu := res.Usage.User + res.Usage.System
	if res.Usage.Cgroup == "" && (len(res.Usage.Incomplete) == 0) == (cpu < counted) {
		t.Errorf("before BecomeSubreaper: CPU %v of %v wall, incomplete %q: a missing figure must be marked, a complete one not", cpu, res.Usage.Wall, res.Usage.Incomplete)
	}
	if err := BecomeSubreaper(); err != nil {
		t.Fatal(err)
	}
	if res, err = sb.Run(context.Background(), busy()); err != nil {
		t.Fatal(err)
	}
	if cpu := res.Usage.User + res.Usage.System; cpu < counted || len(res.Usage.Incomplete) > 0 {
		t.Errorf("as a subreaper: CPU %v of a %v CPU-bound run, incomplete %q", cpu, res.Usage.Wall, res.Usage.Incomplete)
	}
}

func TestHomeWorkspaceOptIn(t *testing.T) {
	home, ws := fakeHost(t)
	for _, tc := range []struct {
		name string
		opts []Option
		want bool
	}{
		{"home allowed", []Option{WithWorkspace(home), WithHomeWorkspace()}, true},
		{"project with the option", []Option{WithWorkspace(ws), WithHomeWorkspace()}, false},
		{"home in mode off", []Option{WithWorkspace(home), WithMode("off")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := New(tc.opts...)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer sb.Close()
			if got := sb.Policy().HomeWorkspace; got != tc.want {
				t.Errorf("HomeWorkspace = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCommandEnv: the command's environment (cmd.Env, or the policy's
// allowlist when it is nil) reaches the command inside, PATH look-up
// included, through the helper's spec; bwrap itself, on the host, gets an
// empty one. A large environment must not block Wrap on the spec's pipe.
func TestCommandEnv(t *testing.T) {
	_, ws := fakeHost(t)
	bin := filepath.Join(ws, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "cordon-env-tool"), []byte("#!/bin/sh\necho \"X=$X big=${#BIG}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("b", 100<<10) // more than a pipe's buffer
	sb, err := New(WithWorkspace(ws), WithEnv("X=policy"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		wrap bool
		argv []string
		env  []string
		want string
	}{
		{"Run, policy env", false, []string{"sh", "-c", `echo "X=$X big=${#BIG}"`}, nil, "X=policy big=0\n"},
		{"Run, cmd.Env", false, []string{"cordon-env-tool"}, []string{"PATH=" + bin + ":/usr/bin:/bin", "X=1", "X=cmd", "BIG=" + big}, "X=cmd big=102400\n"},
		{"Wrap, policy env", true, []string{"sh", "-c", `echo "X=$X big=${#BIG}"`}, nil, "X=policy big=0\n"},
		{"Wrap, cmd.Env", true, []string{"cordon-env-tool"}, []string{"PATH=" + bin + ":/usr/bin:/bin", "X=1", "X=cmd", "BIG=" + big}, "X=cmd big=102400\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			cmd := exec.Command(tc.argv[0], tc.argv[1:]...)
			cmd.Dir, cmd.Env = ws, tc.env
			cmd.Stdout, cmd.Stderr = &out, &errb
			if tc.wrap {
				if err := sb.Wrap(cmd); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(cmd.Env, plan.LauncherEnv()) {
					t.Errorf("bwrap's environment after Wrap is %.200q, want %q (the command's is its spec's)", cmd.Env, plan.LauncherEnv())
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Run() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("run: %v\n%s", err, errb.String())
					}
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					t.Fatal("the wrapped command hung")
				}
			} else {
				res, err := sb.Run(context.Background(), cmd)
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("run: %v %+v\n%s", err, res, errb.String())
				}
			}
			if out.String() != tc.want {
				t.Errorf("stdout %q, want %q (stderr %q)", out.String(), tc.want, errb.String())
			}
		})
	}
	if err := sb.Close(); err != nil {
		t.Fatal(err)
	}
}
