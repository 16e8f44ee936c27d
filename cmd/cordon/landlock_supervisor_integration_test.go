//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// landlockEnv is a sandbox environment for the Landlock-only backend, with
// a workspace holding a public file and two secrets (.env, sub/.env).
func landlockEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	e := newEnv(t)
	requireLandlock(t)
	writeFile(t, filepath.Join(e.ws, "a.txt"), "PUBLIC-a1\n")
	writeFile(t, filepath.Join(e.ws, ".env"), "LLSUP-SECRET-top-9e1\n")
	writeFile(t, filepath.Join(e.ws, "sub", ".env"), "LLSUP-SECRET-sub-9e2\n")
	return e
}

// TestLandlockSupervisorSecrets: on the Landlock-only backend a secret
// inside the workspace (which Landlock lets the command read and write
// whole) is refused by the supervisor, however it is reached: cat, cp, a
// hard link, tar, a symbolic link made during the run, a relative path
// from a directory descriptor; the public file next to it still reads, and
// the workspace is still writable.
func TestLandlockSupervisorSecrets(t *testing.T) {
	t.Parallel()
	e := landlockEnv(t)
	script := strings.Join([]string{
		`cat a.txt`,
		`cat .env sub/.env; echo cat=$?`,
		`cp .env copied; echo cp=$?; cat copied 2>/dev/null`,
		`ln .env hard; echo ln=$?; cat hard 2>/dev/null`,
		`tar cf out.tar .env sub/.env; echo tar=$?; tar xOf out.tar 2>/dev/null`,
		`ln -s .env soft; cat soft; echo soft=$?`,
		`cd sub && cat ./.env ../sub/.env; echo rel=$?; cd ..`,
		`echo made > new.txt && cat new.txt`,
		`echo planted > .env; echo write=$?`,
		`rm .env; echo rm=$?`,
		`mv sub/.env moved; echo mv=$?`,
	}, "\n")
	r := e.sh(script, "--backend", "landlock")
	if strings.Contains(r.all(), "LLSUP-SECRET") {
		t.Fatalf("a secret in the workspace reached the command on the Landlock-only backend: %s", r)
	}
	if !strings.Contains(r.stdout, "PUBLIC-a1") || !strings.Contains(r.stdout, "made") {
		t.Errorf("the public file or a new one did not work: %s", r)
	}
	for _, want := range []string{"cat=1", "cp=1", "ln=1", "tar=2", "soft=1", "rel=1", "write=2", "rm=1", "mv=1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %s: %s", want, r)
		}
	}
	if strings.Contains(r.stderr, "stay readable and writable without bubblewrap") {
		t.Errorf("the supervised backend still declares the secrets readable: %s", r.stderr)
	}
	for _, p := range []string{".env", "sub/.env"} {
		b, err := os.ReadFile(filepath.Join(e.ws, p))
		if err != nil || !strings.HasPrefix(string(b), "LLSUP-SECRET") {
			t.Errorf("%s changed or went: %q %v", p, b, err)
		}
	}
}

// TestLandlockSupervisorDenyDir: a --deny directory inside the workspace is
// neither listed, read nor written on the Landlock-only backend, and
// cannot be moved out of its rule (renaming its parent).
func TestLandlockSupervisorDenyDir(t *testing.T) {
	t.Parallel()
	e := landlockEnv(t)
	secret := filepath.Join(e.ws, "vault")
	writeFile(t, filepath.Join(secret, "key.txt"), "LLSUP-VAULT-9e3\n")
	writeFile(t, filepath.Join(e.ws, "outer", "vault2", "k.txt"), "LLSUP-VAULT-9e4\n")
	script := strings.Join([]string{
		`ls vault; echo ls=$?`,
		`cat vault/key.txt; echo cat=$?`,
		`echo x > vault/new.txt; echo write=$?`,
		`mv outer elsewhere; echo mv=$?; cat elsewhere/vault2/k.txt 2>/dev/null`,
		`cat outer/vault2/k.txt; echo cat2=$?`,
	}, "\n")
	r := e.sh(script, "--backend", "landlock", "--deny", secret, "--deny", filepath.Join(e.ws, "outer", "vault2"))
	if strings.Contains(r.all(), "LLSUP-VAULT") {
		t.Fatalf("a --deny directory inside the workspace was read: %s", r)
	}
	for _, want := range []string{"ls=2", "cat=1", "write=2", "mv=1", "cat2=1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %s: %s", want, r)
		}
	}
	if exists(filepath.Join(secret, "new.txt")) || !exists(filepath.Join(e.ws, "outer", "vault2", "k.txt")) {
		t.Errorf("the denied directory was written or moved: %s", r)
	}
}

// TestLandlockSupervisorProtected: the protected paths inside the writable
// workspace (.git/hooks, .git/config, .mcp.json, .vscode) stay read-only
// during the run on the Landlock-only backend, not only disarmed after it;
// the rest of .git stays writable (git commit works).
func TestLandlockSupervisorProtected(t *testing.T) {
	t.Parallel()
	e := landlockEnv(t)
	git := requireTool(t, "git")
	for _, args := range [][]string{{"init", "-q", "."}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if out, err := exec.Command(git, append([]string{"-C", e.ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	writeFile(t, filepath.Join(e.ws, ".vscode", "settings.json"), "{}\n")
	writeFile(t, filepath.Join(e.ws, ".mcp.json"), "{}\n")
	config, err := os.ReadFile(filepath.Join(e.ws, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		`printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/post-commit; echo hook=$?`,
		`echo '[core] fsmonitor = x' >> .git/config; echo config=$?`,
		`echo '{"x":1}' > .mcp.json; echo mcp=$?`,
		`echo '{"x":1}' > .vscode/tasks.json; echo tasks=$?`,
		`echo '{"x":1}' > .vscode/settings.json; echo settings=$?`,
		`mv .vscode vs2; echo mvdir=$?`,
		`chmod 777 .git/hooks; echo chmodhooks=$?`,
		`git add a.txt && git commit -qm x && echo commit=ok`,
	}, "\n")
	r := e.sh(script, "--backend", "landlock")
	for _, want := range []string{"hook=2", "config=2", "mcp=2", "tasks=2", "settings=2", "mvdir=1", "chmodhooks=1", "commit=ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %s: %s", want, r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, ".git", "config")); string(b) != string(config) {
		t.Errorf(".git/config changed: %q", b)
	}
	if exists(filepath.Join(e.ws, ".git", "hooks", "post-commit")) || exists(filepath.Join(e.ws, ".vscode", "tasks.json")) {
		t.Errorf("a protected path was written: %s", r)
	}
}

// TestLandlockSupervisorMetadata: metadata changes outside the write paths
// (chmod 666 and chmod 0 of home files, touch -d, setfattr) are refused on
// the Landlock-only backend, which no longer declares them as a gap; in the
// workspace they work.
func TestLandlockSupervisorMetadata(t *testing.T) {
	t.Parallel()
	e := landlockEnv(t)
	setfattr := requireTool(t, "setfattr")
	key := filepath.Join(e.home, ".ssh", "id_rsa")
	rc := filepath.Join(e.home, ".bashrc")
	writeFile(t, key, "KEY")
	writeFile(t, rc, "# rc\n")
	if err := os.Chmod(key, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(rc, old, old); err != nil {
		t.Fatal(err)
	}
	script := strings.Join([]string{
		// setfattr first: once a chmod 0 went through, the mode alone
		// would refuse it.
		fmt.Sprintf(`%s -n user.x -v 1 %s; echo setfattr=$?`, setfattr, rc),
		fmt.Sprintf(`chmod 666 %s; echo chmod666=$?`, key),
		fmt.Sprintf(`chmod 0 %s; echo chmod0=$?`, rc),
		fmt.Sprintf(`touch -d 2000-01-01 %s; echo touch=$?`, rc),
		`chmod 700 a.txt && touch -d 2001-01-01 a.txt && echo inside=ok`,
	}, "\n")
	r := e.sh(script, "--backend", "landlock")
	for _, want := range []string{"chmod666=1", "chmod0=1", "touch=1", "setfattr=1", "inside=ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %s: %s", want, r)
		}
	}
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v %v", key, fi.Mode(), err)
	}
	if fi, err := os.Stat(rc); err != nil || fi.Mode().Perm() != 0o644 || !fi.ModTime().Equal(old) {
		t.Errorf("%s: mode %v, mtime %v %v", rc, fi.Mode(), fi.ModTime(), err)
	}
	if out, _ := exec.Command("getfattr", "-n", "user.x", rc).CombinedOutput(); strings.Contains(string(out), "user.x=") {
		t.Errorf("setfattr went through: %s", out)
	}
	if fi, err := os.Stat(filepath.Join(e.ws, "a.txt")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("chmod in the workspace did not work: %v %v", fi.Mode(), err)
	}
	if strings.Contains(r.stderr, "file metadata") {
		t.Errorf("the metadata gap is still declared: %s", r.stderr)
	}
}

// racerSource is a program with two threads flipping a path buffer
// between a.txt and .env while the main thread opens it in a loop,
// bounded in count and time; it reports what it opened.
const racerSource = `package main

import (
	"bytes"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

func main() {
	buf := make([]byte, 8)
	copy(buf, "a.txt\x00")
	var stop atomic.Bool
	for i := 0; i < 2; i++ {
		go func(i int) {
			runtime.LockOSThread()
			for !stop.Load() {
				if i == 0 {
					copy(buf, ".env\x00\x00")
				} else {
					copy(buf, "a.txt\x00")
				}
			}
		}(i)
	}
	fdcwd := -100
	deadline := time.Now().Add(8 * time.Second)
	var ok, refused, other, leaked int
	rb := make([]byte, 256)
	for n := 0; n < 20000 && time.Now().Before(deadline); n++ {
		fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(fdcwd), uintptr(unsafe.Pointer(&buf[0])), syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
		if e != 0 {
			if e == syscall.EACCES {
				refused++
			} else {
				other++
			}
			continue
		}
		m, _ := syscall.Read(int(fd), rb)
		syscall.Close(int(fd))
		if m > 0 && bytes.Contains(rb[:m], []byte("SECRET")) {
			leaked++
			fmt.Printf("leaked %q\n", rb[:m])
		} else {
			ok++
		}
	}
	stop.Store(true)
	fmt.Printf("ok %d refused %d other %d leaked %d\n", ok, refused, other, leaked)
}
`

// TestLandlockSupervisorSwapRace: a thread that swaps the path between the
// supervisor's check and the kernel's use never gets .env: the supervisor
// opens what it checked and hands that descriptor in. Both outcomes must
// be seen (the race was run), and no secret.
func TestLandlockSupervisorSwapRace(t *testing.T) {
	e := landlockEnv(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, "no go command to build the racer")
	}
	src := filepath.Join(e.root, "racer", "main.go")
	writeFile(t, src, racerSource)
	writeFile(t, filepath.Join(e.root, "racer", "go.mod"), "module racer\n\ngo 1.21\n")
	bin := filepath.Join(e.ws, "racer")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	build.Dir = filepath.Dir(src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the racer: %v\n%s", err, out)
	}
	r := e.runTimeout(60*time.Second, nil, "run", "--backend", "landlock", "--", bin)
	if strings.Contains(r.all(), "SECRET") || strings.Contains(r.stdout, "leaked \"") {
		t.Fatalf("the swap race reached .env: %s", r)
	}
	m := regexp.MustCompile(`ok (\d+) refused (\d+) other (\d+) leaked 0`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("the racer did not report: %s", r)
	}
	ok, _ := strconv.Atoi(m[1])
	refused, _ := strconv.Atoi(m[2])
	if ok == 0 || refused == 0 {
		t.Errorf("the race was not run (both a.txt and .env must be tried): %s", r.stdout)
	}
	t.Logf("racer: %s", strings.TrimSpace(r.stdout))
}
