//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/plan/sbpl"
)

// seatbeltEnv is newEnv without bubblewrap: the Seatbelt plan needs
// nothing of the host's sandboxing.
func seatbeltEnv(t *testing.T) *sandboxEnv {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &sandboxEnv{t: t, root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "src", "proj")}
	for _, d := range []string{e.ws, filepath.Join(e.home, ".config"), filepath.Join(e.home, ".local", "state")} {
		mkdir(t, d)
	}
	return e
}

// TestSeatbeltExplain: cordon policy --backend seatbelt --explain prints,
// on Linux, the macOS plan: sandbox-exec with the profile, which passes
// sbpl.Check and holds no path, and its parameters, which hold them.
func TestSeatbeltExplain(t *testing.T) {
	t.Parallel()
	e := seatbeltEnv(t)
	r := e.run("policy", "--backend", "seatbelt", "--explain", "--", "make", "test")
	if r.code != 0 {
		t.Fatalf("cordon policy --explain: %s", r)
	}
	out := r.stdout
	for _, want := range []string{"backend: seatbelt", "  /usr/bin/sandbox-exec\n", "  -p PROFILE (below)\n", "  make test\n", "seatbelt params:\n", "  W0 = " + e.ws + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	_, rest, ok := strings.Cut(out, "seatbelt profile (")
	if !ok {
		t.Fatalf("no profile in\n%s", out)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	profile, _, _ := strings.Cut(rest, "seatbelt params:")
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(profile, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	text := strings.Join(lines, "\n") + "\n"
	if err := sbpl.Check(text); err != nil {
		t.Errorf("the printed profile fails sbpl.Check: %v\n%s", err, text)
	}
	if !strings.Contains(text, "(deny default (with message \"cordon-") {
		t.Errorf("no tagged (deny default) in\n%s", text)
	}
	if strings.Contains(text, e.root) {
		t.Errorf("a path is pasted into the profile:\n%s", text)
	}
}

// TestSeatbeltExplainFiltered: with a filtered network, --explain says
// that the Seatbelt profile, not Landlock, confines the command to the
// proxy's two ports, which are added at launch; nothing is degraded, and
// strict mode accepts the plan.
func TestSeatbeltExplainFiltered(t *testing.T) {
	t.Parallel()
	e := seatbeltEnv(t)
	for _, mode := range []string{"standard", "strict"} {
		r := e.run("policy", "--backend", "seatbelt", "--mode", mode, "--allow-net", "example.com:443", "--explain", "--", "make", "test")
		if r.code != 0 {
			t.Fatalf("%s: cordon policy --explain: %s", mode, r)
		}
		out := r.stdout
		for _, want := range []string{
			"network: mode filtered, without a network namespace (the Seatbelt profile allows connecting only to the proxy's two ports and the forwarded ports, on the host's loopback)\n",
			"network: HTTP and SOCKS5 proxies served by cordon on the host's 127.0.0.1, on ports chosen at run time, with a per-run token",
			";; network: filtered, through cordon's proxies on the host's loopback: their two ports, chosen at launch, are allowed by a rule added at the end of this profile",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in\n%s", mode, want, out)
			}
		}
		for _, bad := range []string{"Landlock confines", "degraded", `"localhost:*"`} {
			if strings.Contains(out+r.stderr, bad) {
				t.Errorf("%s: %q in\n%s%s", mode, bad, out, r.stderr)
			}
		}
	}
}

// TestSeatbeltRunRefused: cordon run --backend seatbelt on Linux exits
// 125 with one line that says why and what to use, and runs nothing.
func TestSeatbeltRunRefused(t *testing.T) {
	t.Parallel()
	e := seatbeltEnv(t)
	marker := filepath.Join(e.ws, "ran")
	r := e.run("run", "--backend", "seatbelt", "--", "sh", "-c", "touch "+marker)
	if r.code != 125 {
		t.Errorf("exit %d, want 125\n%s", r.code, r)
	}
	want := "cordon: --backend seatbelt: the macOS backend runs only on macOS, not on linux; use --backend bwrap or auto\n"
	if r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	if exists(marker) {
		t.Error("the command ran")
	}
}
