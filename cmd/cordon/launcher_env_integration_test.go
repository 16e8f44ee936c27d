//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// evilSource is a shared library whose constructor records where it ran:
// it appends "CORDON-EVIL pid=N exe=PATH" to MARKER, an absolute path
// outside everything the sandbox may write, and prints the same line on
// stderr. If MARKER is ever written, the library ran in a process on the
// host. It also stands in for libselinux.so.1 and libcap.so.2 (stubs of
// what bwrap imports from them, versioned as libselinux's are), so that
// an LD_LIBRARY_PATH naming its directory would get it loaded into bwrap.
const evilSource = `
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void cordon_evil(void) {
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0) n = 0;
	exe[n] = 0;
	char line[4300];
	int len = snprintf(line, sizeof line, "CORDON-EVIL pid=%d exe=%s\n", (int)getpid(), exe);
	int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		(void)!write(fd, line, len);
		close(fd);
	}
	(void)!write(2, line, len);
}

int is_selinux_enabled(void) { return 0; }
int security_check_context(const char *c) { (void)c; return 0; }
int setexeccon(const char *c) { (void)c; return 0; }
int setfscreatecon(const char *c) { (void)c; return 0; }
int cap_from_name(const char *n, void *v) { (void)n; (void)v; return -1; }

/* A gconv module, for GCONV_PATH. */
int gconv_init(void *step) { (void)step; return 1; }
int gconv(void) { return 1; }
`

// evilVersions gives the stubs libselinux's symbol version: bwrap is linked
// with BIND_NOW against LIBSELINUX_1.0, and would refuse an unversioned
// shim before any constructor ran.
const evilVersions = `LIBSELINUX_1.0 {
	global: is_selinux_enabled; security_check_context; setexeccon; setfscreatecon; cap_from_name; gconv_init; gconv;
	local: *;
};
`

// evilLib is the planted library and what points at it.
type evilLib struct {
	lib    string // the library itself, for LD_PRELOAD
	libDir string // libselinux.so.1 and libcap.so.2 shims, for LD_LIBRARY_PATH
	gconv  string // a gconv-modules directory loading the library, for GCONV_PATH
	marker string // written only if the library ran on the host
}

// buildEvilLib compiles evilSource with the C compiler into dir (in the
// workspace, where a sandboxed command could have planted it). Without a
// C compiler the test skips, or fails under CI=true.
func buildEvilLib(t *testing.T, dir, marker string) evilLib {
	t.Helper()
	cc := ""
	for _, name := range []string{"cc", "gcc", "clang"} {
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		skipOrFail(t, "no C compiler (cc, gcc or clang) to build the test's shared library: apt-get install -y gcc libc6-dev")
		return evilLib{}
	}
	mkdir(t, dir)
	src := filepath.Join(dir, "evil.c")
	writeFile(t, src, evilSource)
	vers := filepath.Join(dir, "evil.map")
	writeFile(t, vers, evilVersions)
	l := evilLib{
		lib:    filepath.Join(dir, "libevil.so"),
		libDir: filepath.Join(dir, "lib"),
		gconv:  filepath.Join(dir, "gconv"),
		marker: marker,
	}
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", l.lib, src,
		"-Wl,--version-script="+vers, fmt.Sprintf("-DMARKER=%q", marker)).CombinedOutput()
	if err != nil {
		t.Fatalf("compiling the test library with %s: %v\n%s", cc, err, out)
	}
	lib := readFile(t, l.lib)
	for _, name := range []string{"libselinux.so.1", "libcap.so.2"} {
		writeFile(t, filepath.Join(l.libDir, name), lib)
	}
	writeFile(t, filepath.Join(l.gconv, "libevil.so"), lib)
	writeFile(t, filepath.Join(l.gconv, "gconv-modules"),
		"module\tEVIL//\tINTERNAL\tlibevil\t1\nmodule\tINTERNAL\tEVIL//\tlibevil\t1\nalias\tUTF-8//\tEVIL//\n")
	return l
}

// TestLauncherEnvironment: variables that make the dynamic linker load a
// library (LD_PRELOAD, LD_LIBRARY_PATH, GCONV_PATH), set with --env or
// in the user's config, reach the command inside the sandbox, where it is
// confined, but never a process cordon starts on the host: not bwrap, not
// the helper on the Landlock-only backend. The library's constructor
// writes a marker outside everything the sandbox may write; it must never
// appear.
func TestLauncherEnvironment(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	marker := filepath.Join(e.root, "host-marker")
	evil := buildEvilLib(t, filepath.Join(e.ws, "planted"), marker)
	backends := []string{"bwrap", "landlock"}
	for _, tc := range []struct {
		name    string
		flags   []string
		config  string // the user config's sandbox.env entries, YAML
		command []string
		loads   bool // the library loads into the command itself
	}{
		{name: "LD_PRELOAD", flags: []string{"--env", "LD_PRELOAD=" + evil.lib}, command: []string{"true"}, loads: true},
		{name: "LD_LIBRARY_PATH", flags: []string{"--env", "LD_LIBRARY_PATH=" + evil.libDir}, command: []string{"true"}},
		{name: "GCONV_PATH", flags: []string{"--env", "GCONV_PATH=" + evil.gconv, "--env", "CHARSET=EVIL"}, command: []string{"true"}},
		{name: "all at once", flags: []string{"--env", "LD_PRELOAD=" + evil.lib, "--env", "LD_LIBRARY_PATH=" + evil.libDir, "--env", "GCONV_PATH=" + evil.gconv},
			command: []string{"sh", "-c", "true"}, loads: true},
		{name: "config env", config: fmt.Sprintf("[%q, %q]", "LD_PRELOAD="+evil.lib, "LD_LIBRARY_PATH="+evil.libDir), command: []string{"true"}, loads: true},
	} {
		for _, backend := range backends {
			t.Run(tc.name+"/"+backend, func(t *testing.T) {
				if backend == "landlock" {
					requireLandlock(t)
				}
				userConfig := filepath.Join(e.home, ".config", "cordon", "config.yaml")
				if tc.config != "" {
					writeFile(t, userConfig, "sandbox:\n  env: "+tc.config+"\n")
					t.Cleanup(func() { os.Remove(userConfig) })
				}
				t.Cleanup(func() { os.Remove(marker) }) // each case on its own
				args := append([]string{"run", "--backend", backend}, tc.flags...)
				r := e.run(append(append(args, "--"), tc.command...)...)
				if exists(marker) {
					t.Fatalf("the library ran on the host:\n%s\n%s", readFile(t, marker), r)
				}
				if r.code != 0 {
					t.Errorf("exit %d, want 0\n%s", r.code, r)
				}
				loaded := false
				for _, l := range strings.Split(r.all(), "\n") {
					_, exe, ok := strings.Cut(l, "CORDON-EVIL ")
					if !ok {
						continue
					}
					_, exe, _ = strings.Cut(exe, " exe=")
					switch filepath.Base(exe) {
					case "true", "sh", "dash", "bash":
						loaded = true // the command itself, confined
					default:
						t.Errorf("the library loaded into %s: %s", exe, l)
					}
				}
				if tc.loads && !loaded {
					// The variable must still reach the command, or the
					// test proves nothing.
					t.Errorf("the library never loaded into the command: the variable did not reach it\n%s", r)
				}
			})
		}
	}
}

// TestLauncherEnvironmentHidden: bwrap runs on the host with an
// environment of its own (only the helper's GOMAXPROCS=1), so a value
// given to the command (a token, say) is not in bwrap's /proc/PID/environ
// for other tools on the host to read.
func TestLauncherEnvironmentHidden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := uniqueSleep(305)
	markers := []string{"sleep " + s}
	t.Cleanup(func() { killLeftovers(waitNoProcs(markers, 0)) })
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := e.command(ctx, "run", "--backend", "bwrap", "--env", "CORDON_TOKEN=tok-3f9c1", "--", "sh", "-c", `[ "$CORDON_TOKEN" = tok-3f9c1 ] && exec sleep `+s)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var bwrapEnv []byte
	deadline := time.Now().Add(5 * time.Second)
	for bwrapEnv == nil {
		if time.Now().After(deadline) {
			t.Fatal("the sandbox's sleep never appeared on the host (did CORDON_TOKEN reach the command?)")
		}
		sleeping := false
		for _, pid := range procsWith("sleep " + s) {
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			switch filepath.Base(exe) {
			case "bwrap":
				env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
				if err == nil {
					bwrapEnv = append([]byte{}, env...)
				}
			case "sleep":
				sleeping = true
			}
		}
		if !sleeping {
			bwrapEnv = nil // the command has not checked its variable yet
		}
		time.Sleep(20 * time.Millisecond)
	}
	if string(bwrapEnv) != "GOMAXPROCS=1\x00" {
		t.Errorf("bwrap's environment on the host is %q, want only GOMAXPROCS=1", strings.ReplaceAll(string(bwrapEnv), "\x00", " "))
	}
}
