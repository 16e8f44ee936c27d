//go:build linux

package main

// Integration tests: they run the real cordon binary under the real
// bubblewrap, each in a temporary fake HOME and workspace (never the real
// home), and check what the confined command can and cannot do.
//
// The binaries (./cmd/...: cordon, with cordon-helper and cordon-mcp
// beside it) are built once by TestMain, or cordon is taken from
// $CORDON_BIN, its siblings beside it (CI runs the compiled test binary as
// an unprivileged user with prebuilt binaries).
// A test skips only when bwrap or user namespaces are missing, and under
// CI=true such a skip is a failure.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// cordonBin is the cordon binary under test, with cordon-helper and
// cordon-mcp beside it.
var cordonBin string

// cmdTimeout bounds every single run of cordon.
const cmdTimeout = 12 * time.Second

const bwrapPath = "/usr/bin/bwrap"

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse() // for testing.Short
	defer removeSharedDirs()
	setParallel()
	if b := os.Getenv("CORDON_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			fmt.Fprintf(os.Stderr, "CORDON_BIN=%s: %v\n", b, err)
			return 2
		}
		if _, err := os.Stat(abs); err != nil {
			fmt.Fprintf(os.Stderr, "CORDON_BIN=%s: %v\n", b, err)
			return 2
		}
		cordonBin = abs
		startWarmGoCache()
		return m.Run()
	}
	if testing.Short() && os.Getenv("CI") != "true" {
		// go test -short: no build; the integration tests skip.
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "cordon-itest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating build dir:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	// Other users (a test run as root spawning nothing, or a developer's
	// helper) may need to execute the binary.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "chmod build dir:", err)
		return 2
	}
	// Every binary, into one directory: cordon runs cordon-helper and
	// cordon-mcp from beside itself.
	bin := filepath.Join(dir, "cordon")
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "github.com/cordon-sandbox/cordon/cmd/...")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout = os.Stderr
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cordon:", err)
		return 2
	}
	cordonBin = bin
	startWarmGoCache()
	return m.Run()
}

// testsPerCPU is how many tests run at once per CPU (-test.parallel),
// unless the command line sets -parallel: an integration test mostly waits
// (for cordon's runs to start and end, for its helper, a terminal, a
// server, a question's timeout), so that running only as many tests at
// once as there are CPUs, go test's default, leaves the CPUs idle.
const testsPerCPU = 2

// setParallel sets -test.parallel to testsPerCPU per CPU unless the
// command line set it.
func setParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(testsPerCPU*runtime.GOMAXPROCS(0)))
	}
}

// --- skip rule ---------------------------------------------------------

var (
	bwrapOnce   sync.Once
	bwrapReason string // empty: usable
)

// requireBwrap skips the test when bubblewrap or user namespaces are
// unavailable; under CI=true it fails instead.
func requireBwrap(t *testing.T) {
	t.Helper()
	if cordonBin == "" {
		skipOrFail(t, "cordon binary not built (go test -short); set CORDON_BIN or drop -short")
		return
	}
	bwrapOnce.Do(func() {
		if _, err := os.Stat(bwrapPath); err != nil {
			bwrapReason = fmt.Sprintf("bubblewrap missing (%v): apt-get install -y bubblewrap", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, bwrapPath, "--unshare-user", "--unshare-pid",
			"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "/bin/true").CombinedOutput()
		if err != nil {
			bwrapReason = fmt.Sprintf("cannot create a user namespace with bwrap (%v): %s", err, strings.TrimSpace(string(out)))
		}
	})
	if bwrapReason != "" {
		skipOrFail(t, bwrapReason)
	}
}

func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	testenv.SkipOrFail(t, "%s", reason)
}

// --- test environment --------------------------------------------------

// sandboxEnv is one fake machine: a home with XDG dirs, a workspace in it,
// and a sibling project beside the workspace.
type sandboxEnv struct {
	t       *testing.T
	root    string // t.TempDir()
	home    string // fake HOME
	ws      string // the workspace (current directory of cordon)
	sibling string // another project beside the workspace
	extra   []string
	// walkServer lets cordon run start a walk server (see
	// TestWalkServer): off elsewhere, where a server started by a large
	// workspace's run could outlive the test's fake home.
	walkServer bool
}

func newEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	requireBwrap(t)
	h := testenv.FakeHome(t)
	e := &sandboxEnv{
		t:       t,
		root:    h.Root,
		home:    h.Dir,
		ws:      h.Workspace,
		sibling: filepath.Join(h.Dir, "src", "other"),
	}
	mkdir(t, e.sibling)
	writeFile(t, filepath.Join(e.sibling, "notes.txt"), "SIBLING-SECRET-7f3a")
	return e
}

// environ is cordon's complete environment: nothing from the test's own.
func (e *sandboxEnv) environ() []string {
	env := []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + e.home,
		"USER=cordontest",
		"LOGNAME=cordontest",
		"LANG=C.UTF-8",
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(e.home, ".local", "state"),
	}
	if !e.walkServer {
		env = append(env, "CORDON_NO_WALK_SERVER=1")
	}
	return append(env, e.extra...)
}

// command returns an unstarted cordon command in the workspace.
func (e *sandboxEnv) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, cordonBin, args...)
	cmd.Dir = e.ws
	cmd.Env = e.environ()
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

type runResult struct {
	code           int
	stdout, stderr string
}

// all is stdout and stderr together, for "never appears" checks.
func (r runResult) all() string { return r.stdout + "\n" + r.stderr }

func (r runResult) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
}

// run runs cordon with args and waits at most cmdTimeout.
func (e *sandboxEnv) run(args ...string) runResult {
	return e.runInput(nil, args...)
}

func (e *sandboxEnv) runInput(stdin []byte, args ...string) runResult {
	e.t.Helper()
	return e.runTimeout(cmdTimeout, stdin, args...)
}

// runTimeout is runInput with its own bound, for the few runs that do real
// work (a cold go build compiles the standard library: seconds on 2 cores,
// more when the other test packages run beside it).
func (e *sandboxEnv) runTimeout(limit time.Duration, stdin []byte, args ...string) runResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := e.command(ctx, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		e.t.Fatalf("cordon %q did not finish within %s\nstdout: %s\nstderr: %s", args, limit, out.String(), errb.String())
	}
	r := runResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if r.code < 0 {
			e.t.Fatalf("cordon %q died of a signal: %v\n%s", args, err, r)
		}
	default:
		e.t.Fatalf("running cordon %q: %v", args, err)
	}
	return r
}

// sh runs `cordon run [flags] -- sh -c script`.
func (e *sandboxEnv) sh(script string, flags ...string) runResult {
	e.t.Helper()
	args := append([]string{"run"}, flags...)
	args = append(args, "--", "sh", "-c", script)
	return e.run(args...)
}

// userStderr drops cordon's "degraded" notices (printed e.g. when running
// as root), leaving what the command and cordon's errors wrote.
func userStderr(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, "cordon: degraded:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "")
}

// --- file helpers ------------------------------------------------------

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// listing describes a tree: every entry's relative path, type and, for
// regular files, content; symlinks with their target.
func listing(t *testing.T, dir string, skip ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if slices.Contains(skip, rel) {
			return filepath.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, fmt.Sprintf("%s -> %s", rel, target))
		case d.IsDir():
			out = append(out, fmt.Sprintf("%s/ %v", rel, fi.Mode().Perm()))
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %v %q", rel, fi.Mode(), b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func diffListing(before, after []string) string {
	in := func(s string, l []string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	var b strings.Builder
	for _, x := range before {
		if !in(x, after) {
			fmt.Fprintf(&b, "  - %s\n", x)
		}
	}
	for _, x := range after {
		if !in(x, before) {
			fmt.Fprintf(&b, "  + %s\n", x)
		}
	}
	return b.String()
}

// --- host process helpers ----------------------------------------------

// procsWith returns the pids of host processes whose command line
// (arguments joined by spaces) contains marker.
func procsWith(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		var pid int
		if _, err := fmt.Sscanf(ent.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoProcs waits up to d for every process matching one of markers to
// vanish, and returns what is left.
func waitNoProcs(markers []string, d time.Duration) map[string][]int {
	deadline := time.Now().Add(d)
	for {
		left := map[string][]int{}
		for _, m := range markers {
			if p := procsWith(m); len(p) > 0 {
				left[m] = p
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killLeftovers kills processes a failed test left behind, so they do not
// outlive the test run.
func killLeftovers(left map[string][]int) {
	for _, pids := range left {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// uniqueSleep returns a sleep duration argument such as "300.12345" that
// identifies this test run's process on the host.
func uniqueSleep(base int) string {
	return fmt.Sprintf("%d.%05d", base, (os.Getpid()*7+int(time.Now().UnixNano()/1000))%100000)
}

func isRoot() bool { return os.Geteuid() == 0 }

// eachBackend runs f, in parallel, once on bubblewrap and once on the
// Landlock-only backend, each in a fresh environment (the Landlock one
// skipped, or failed under CI, where the kernel has no Landlock).
func eachBackend(t *testing.T, f func(t *testing.T, e *sandboxEnv, backend string)) {
	t.Helper()
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if backend == "landlock" {
				requireLandlock(t)
			}
			f(t, e, backend)
		})
	}
}
