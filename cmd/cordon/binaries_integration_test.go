//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The binaries cordon finds beside itself.
const (
	helperName = "cordon-helper"
	mcpName    = "cordon-mcp"
)

// installBins copies cordon and the siblings named (of the binaries built
// for the tests) into a new directory dir under e.root, as a user's
// install would hold them, and returns cordon's path there.
func installBins(e *sandboxEnv, dir string, siblings ...string) string {
	e.t.Helper()
	bin := filepath.Join(e.root, dir)
	mkdir(e.t, bin)
	if err := os.Chmod(bin, 0o755); err != nil {
		e.t.Fatal(err)
	}
	for _, name := range append([]string{"cordon"}, siblings...) {
		// Copied by cp, not written by this process: a descriptor open
		// for writing here is inherited by every child another test
		// forks meanwhile until it execs, and executing the copy then
		// fails with "text file busy" (CI, TestMCPSibling).
		src, dst := filepath.Join(filepath.Dir(cordonBin), name), filepath.Join(bin, name)
		if out, err := exec.Command("cp", src, dst).CombinedOutput(); err != nil {
			e.t.Fatalf("cp %s: %v\n%s", name, err, out)
		}
		if err := os.Chmod(dst, 0o755); err != nil {
			e.t.Fatal(err)
		}
	}
	return filepath.Join(bin, "cordon")
}

// cordonWithHosts builds a cordon whose proxy reads hosts (a hosts
// file's text, such as "127.0.0.1 name.test") instead of /etc/hosts, with
// cordon-helper beside it, and returns its path: a name the test maps to
// its server on 127.0.0.1 is neither "localhost" nor an address, which
// clients send straight to the loopback past the proxy (Go's and gh's
// proxy rules).
func cordonWithHosts(e *sandboxEnv, hosts string) string {
	return withHosts(e, hosts, "cordon")
}

// withHosts builds program (cordon, or cordon-mcp, whose proxy serves
// run_command) as cordonWithHosts does, beside cordon and cordon-helper,
// and returns its path.
func withHosts(e *sandboxEnv, hosts, program string) string {
	e.t.Helper()
	file := filepath.Join(e.root, "hosts")
	writeFile(e.t, file, hosts)
	bin := filepath.Join(filepath.Dir(installBins(e, "bin", helperName)), program)
	build := exec.Command("go", "build", "-ldflags", "-X github.com/cordon-sandbox/cordon/internal/net/netproxy.hostsPath="+file,
		"-o", bin, "github.com/cordon-sandbox/cordon/cmd/"+program)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		e.t.Fatalf("building %s with a test hosts file: %v\n%s", program, err, out)
	}
	return bin
}

// runBin runs the program bin (a cordon of installBins, or a sibling)
// with args in e's workspace and environment, feeding it stdin.
func (e *sandboxEnv) runBin(bin string, stdin []byte, args ...string) runResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = e.ws, e.environ(), 2*time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		e.t.Fatalf("%s %q did not finish within %s\nstdout: %s\nstderr: %s", bin, args, cmdTimeout, out.String(), errb.String())
	}
	r := runResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		r.code = ee.ExitCode()
	default:
		e.t.Fatalf("running %s %q: %v", bin, args, err)
	}
	return r
}

// oneCordonLine fails unless r is exit 125 with exactly one stderr line,
// "cordon: " followed by want, and the command did not run (it would
// print RAN).
func oneCordonLine(t *testing.T, r runResult, want string) {
	t.Helper()
	if r.code != 125 || strings.Contains(r.stdout, "RAN") || r.stderr != "cordon: "+want+"\n" {
		t.Errorf("%s\nwant exit 125 and the one line %q", r, "cordon: "+want)
	}
}

// reinstallFix is what every missing or tampered binary's error says to
// do.
const reinstallFix = "install all of cordon's binaries together: go install github.com/cordon-sandbox/cordon/cmd/...@latest, or go build -o DIR ./cmd/... in its source"

// TestHelperSiblingChecked: cordon runs the helper cordon-helper from
// beside itself only after checking it on its descriptor: a helper that
// is missing, a symbolic link, writable by group or others, owned by
// another user (as root: chown nobody), or in a directory others can
// write is one clear cordon: line naming the path, what is wrong and the
// fix, exit 125, on bwrap and the Landlock-only backend, and the command
// never runs (never cordon itself as the helper instead).
func TestHelperSiblingChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   func(dir string) string
	}{
		{"missing", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, helperName)); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) string {
			return "the helper " + filepath.Join(dir, helperName) + " is missing: " + reinstallFix
		}},
		{"symlink", func(t *testing.T, dir string) {
			h := filepath.Join(dir, helperName)
			if err := os.Rename(h, h+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(h+".real", h); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) string {
			return "the helper " + filepath.Join(dir, helperName) + " is a symbolic link: cordon runs only a program that is a file of its own beside it; " + reinstallFix
		}},
		{"group-writable", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, helperName), 0o775); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) string {
			h := filepath.Join(dir, helperName)
			return "the helper " + h + " is writable by group or others (mode 0775), so another user could replace what cordon runs: chmod go-w " + h
		}},
		{"other owner", func(t *testing.T, dir string) {
			if !isRoot() {
				t.Skip("only root can give the helper to another user")
			}
			if err := os.Chown(filepath.Join(dir, helperName), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) string {
			return "the helper " + filepath.Join(dir, helperName) + " is owned by uid 65534, neither root nor you (uid 0), so another user could replace what cordon runs: install cordon's binaries into a directory of your own or root's (" + reinstallFix + ")"
		}},
		{"directory writable by others", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, func(dir string) string {
			return "the helper directory " + dir + " is writable by group or others (mode 0777), so another user could replace what cordon runs: chmod go-w " + dir
		}},
	} {
		for _, be := range []string{"bwrap", "landlock"} {
			t.Run(tc.name+"/"+be, func(t *testing.T) {
				e := newEnv(t)
				if be == "landlock" {
					requireLandlock(t)
				}
				cordon := installBins(e, "bin", helperName)
				dir := filepath.Dir(cordon)
				tc.break_(t, dir)
				r := e.runBin(cordon, nil, "run", "--backend", be, "--", "sh", "-c", "echo RAN")
				oneCordonLine(t, r, tc.want(dir))
			})
		}
	}
}

// TestHelperSiblingRuns: installed together anywhere, cordon runs its
// helper from beside itself: a command runs confined on both backends,
// the helper is bound at /run/cordon/cordon-helper under bwrap, a cordon
// started through a symbolic link elsewhere finds the helper beside its
// real file, and cordon status names the helper and the MCP server it
// found.
func TestHelperSiblingRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cordon := installBins(e, "elsewhere", helperName, mcpName)
	r := e.runBin(cordon, nil, "run", "--", "sh", "-c", "test -x /run/cordon/cordon-helper && echo RAN")
	if r.code != 0 || r.stdout != "RAN\n" {
		t.Errorf("bwrap: %s", r)
	}
	if landlockAvailable() {
		r = e.runBin(cordon, nil, "run", "--backend", "landlock", "--", "sh", "-c", "echo RAN")
		if r.code != 0 || r.stdout != "RAN\n" {
			t.Errorf("landlock: %s", r)
		}
	}
	link := filepath.Join(e.root, "links", "cordon")
	mkdir(t, filepath.Dir(link))
	if err := os.Symlink(cordon, link); err != nil {
		t.Fatal(err)
	}
	if r := e.runBin(link, nil, "run", "--", "sh", "-c", "echo RAN"); r.code != 0 || r.stdout != "RAN\n" {
		t.Errorf("through a symlink: %s", r)
	}
	dir := filepath.Dir(cordon)
	r = e.runBin(cordon, nil, "status")
	for _, want := range []string{"helper: " + filepath.Join(dir, helperName) + " (ok)", "mcp server: " + filepath.Join(dir, mcpName) + " (ok)"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("cordon status does not say %q:\n%s", want, r)
		}
	}
	if err := os.Chmod(filepath.Join(dir, mcpName), 0o757); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, helperName)); err != nil {
		t.Fatal(err)
	}
	r = e.runBin(cordon, nil, "status", "--json")
	var st struct {
		Binaries []struct{ Name, Role, Path, Error string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("cordon status --json: %v\n%s", err, r)
	}
	got := fmt.Sprint(st.Binaries)
	want := fmt.Sprint([]struct{ Name, Role, Path, Error string }{
		{helperName, "helper", filepath.Join(dir, helperName), "is missing: " + reinstallFix},
		{mcpName, "mcp server", filepath.Join(dir, mcpName), "is writable by group or others (mode 0757), so another user could replace what cordon runs: chmod go-w " + filepath.Join(dir, mcpName)},
	})
	if got != want {
		t.Errorf("cordon status --json binaries:\n%s\nwant\n%s", got, want)
	}
}

// landlockAvailable says whether the kernel has Landlock.
func landlockAvailable() bool {
	_, err := os.Stat("/sys/kernel/security/landlock")
	return err == nil
}

// TestHelperVersionMismatch: a helper from another build of cordon (here
// one built with another helperspec.Version) refuses the spec before
// applying anything: exit 125, one cordon: line naming the helper and
// both versions, reported through the status socket, on both backends.
func TestHelperVersionMismatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "internal", "helperspec", "helperspec.go"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^const Version = (\d+)$`)
	m := re.FindSubmatch(src)
	if m == nil {
		t.Fatal("helperspec.go has no const Version line")
	}
	want, _ := strconv.Atoi(string(m[1]))
	other := want + 98
	overlaid := filepath.Join(e.root, "helperspec.go")
	writeFile(t, overlaid, string(re.ReplaceAll(src, []byte("const Version = "+strconv.Itoa(other)))))
	abs, err := filepath.Abs(filepath.Join("..", "..", "internal", "helperspec", "helperspec.go"))
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(e.root, "overlay.json")
	j, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: overlaid}})
	writeFile(t, overlay, string(j))
	cordon := installBins(e, "bin")
	helper := filepath.Join(filepath.Dir(cordon), helperName)
	build := exec.Command("go", "build", "-overlay", overlay, "-o", helper, "github.com/cordon-sandbox/cordon/cmd/cordon-helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a helper of spec version %d: %v\n%s", other, err, out)
	}
	backends := []string{"bwrap"}
	if landlockAvailable() {
		backends = append(backends, "landlock")
	}
	for _, be := range backends {
		r := e.runBin(cordon, nil, "run", "--backend", be, "--", "sh", "-c", "echo RAN")
		oneCordonLine(t, r, fmt.Sprintf("the helper %s is from another cordon build (spec version %d, cordon wants %d): install all binaries together", helper, other, want))
	}
}

// mcpInitialize is an MCP initialize request, one JSON-RPC line.
const mcpInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"itest","version":"1"}}}`

// TestMCPSibling: "cordon mcp" executes cordon-mcp from beside cordon (in
// the same process: /proc/PID/exe is cordon-mcp) with the same arguments,
// and answers MCP's initialize; cordon-mcp started directly does too;
// --help and "cordon help mcp" are the server's own; a bad flag is its
// one-line error; and without cordon-mcp beside it, cordon mcp is one
// cordon: line naming the missing path, exit 125.
func TestMCPSibling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cordon := installBins(e, "bin", helperName, mcpName)
	dir := filepath.Dir(cordon)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"cordon mcp", []string{cordon, "mcp", "--workspace", e.ws}},
		{"cordon-mcp", []string{filepath.Join(dir, mcpName), "--workspace", e.ws}},
		{"cordon-mcp mcp", []string{filepath.Join(dir, mcpName), "mcp"}},
	} {
		argv := tc.argv
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir, cmd.Env, cmd.WaitDelay = e.ws, e.environ(), 2*time.Second
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				in.Close()
				if err := cmd.Wait(); err != nil {
					t.Errorf("the server ended with %v\nstderr: %s", err, errb.String())
				}
			}()
			if _, err := io.WriteString(in, mcpInitialize+"\n"); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("reading the answer to initialize: %v\nstderr: %s", err, errb.String())
			}
			var resp struct {
				ID     int `json:"id"`
				Result struct {
					ServerInfo struct{ Name string } `json:"serverInfo"`
				} `json:"result"`
			}
			if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.ID != 1 || resp.Result.ServerInfo.Name == "" {
				t.Errorf("answer to initialize %q: %v", line, err)
			}
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid))
			if err != nil || exe != filepath.Join(dir, mcpName) {
				t.Errorf("the server's process runs %q (%v), want %s", exe, err, filepath.Join(dir, mcpName))
			}
		})
	}

	help := e.runBin(cordon, nil, "mcp", "--help")
	if help.code != 0 || !strings.Contains(help.stdout, "Usage:\n  cordon mcp [flags]") || !strings.Contains(help.stdout, "--workspace") || !strings.Contains(help.stdout, "cordon-mcp") {
		t.Errorf("cordon mcp --help:\n%s", help)
	}
	for _, argv := range [][]string{{"help", "mcp"}} {
		if r := e.runBin(cordon, nil, argv...); r.code != 0 || r.stdout != help.stdout {
			t.Errorf("cordon %q:\n%s\nwant the same help as cordon mcp --help", argv, r)
		}
	}
	if r := e.runBin(filepath.Join(dir, mcpName), nil, "--help"); r.code != 0 || r.stdout != help.stdout {
		t.Errorf("cordon-mcp --help:\n%s\nwant the same help as cordon mcp --help", r)
	}
	r := e.runBin(cordon, nil, "mcp", "--nope")
	if r.code != 125 || r.stderr != "cordon: unknown flag: --nope; see 'cordon mcp --help'\n" {
		t.Errorf("cordon mcp --nope: %s", r)
	}
	if r := e.runBin(cordon, nil, "--help"); r.code != 0 || !strings.Contains(r.stdout, "mcp         MCP server on stdio exposing confined tools") {
		t.Errorf("cordon --help does not list mcp:\n%s", r)
	}

	if err := os.Remove(filepath.Join(dir, mcpName)); err != nil {
		t.Fatal(err)
	}
	r = e.runBin(cordon, []byte(mcpInitialize+"\n"), "mcp")
	oneCordonLine(t, r, "the MCP server "+filepath.Join(dir, mcpName)+" is missing: "+reinstallFix)
}
