//go:build linux || darwin

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestResolveSecret: a credential's secret is the first of its variables
// set, its file, its command's output (an argv, no shell); an error says
// where it looked, never a value.
func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("FILE-SECRET-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRED_B", "ENV-SECRET-2")
	t.Setenv("CRED_EMPTY", "")
	for _, tc := range []struct {
		name string
		c    policy.Credential
		want string
		err  string
	}{
		{"second variable", policy.Credential{Name: "x", Env: []string{"CRED_A", "CRED_B"}, File: file}, "ENV-SECRET-2", ""},
		{"file after unset variables", policy.Credential{Name: "x", Env: []string{"CRED_A", "CRED_EMPTY"}, File: file}, "FILE-SECRET-1", ""},
		{"command", policy.Credential{Name: "x", Command: []string{"echo", "CMD-SECRET-3"}}, "CMD-SECRET-3", ""},
		{"shell string is an argv", policy.Credential{Name: "x", Command: []string{"echo CMD-SECRET-4; true"}}, "", "is not installed"},
		{"nothing", policy.Credential{Name: "gh", Env: []string{"CRED_A"}, Command: []string{"sh", "-c", "echo LEAKED-5; exit 3"}},
			"", "credential gh: no secret: $CRED_A is not set, `sh -c echo LEAKED-5; exit 3` failed (exit status 3); set one, or drop the credential"},
		{"two lines", policy.Credential{Name: "x", Command: []string{"sh", "-c", "echo OUT$((6*1)); echo OUT$((7*1))"}}, "", "printed no single-line secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveSecret(tc.c, dir)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("got %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			// The argv is shown, the output never.
			if strings.Contains(err.Error(), "OUT6") || strings.Contains(err.Error(), "LEAKED-5\n") {
				t.Errorf("the error holds the command's output: %v", err)
			}
		})
	}
}

// TestCredRunEnv: the sandbox gets each credential's placeholder in its
// variables (and npm's token variable), the CA variables naming the
// bundle, and never the secret; the bundle holds the host's roots and
// the run's CA.
func TestCredRunEnv(t *testing.T) {
	roots := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(roots, []byte("-----BEGIN CERTIFICATE-----\nHOSTROOTS\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", roots)
	t.Setenv("CRED_TOKEN", "npm_SECRETsecretSECRETsecretSECRETsecret12")
	n := &plan.Net{CABundle: "/tmp/" + plan.CABundleName, Credentials: []policy.Credential{
		{Name: "npm", Hosts: []string{"registry.npmjs.org", "npm.corp.example:4873"}, Env: []string{"CRED_TOKEN"}, Npmrc: true},
	}}
	cr, err := newCredRun(n)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cr.mergeEnv([]string{"CRED_TOKEN=passed-by-user", "PATH=/bin"}), "\n")
	ph := cr.bindings[0].Placeholder
	for _, want := range []string{
		"CRED_TOKEN=" + ph, "npm_config_//registry.npmjs.org/:_authToken=" + ph, "npm_config_//npm.corp.example:4873/:_authToken=" + ph,
		"SSL_CERT_FILE=/tmp/" + plan.CABundleName, "npm_config_cafile=/tmp/" + plan.CABundleName, "PATH=/bin",
	} {
		if !strings.Contains(env, want+"\n") && !strings.HasSuffix(env, want) {
			t.Errorf("the sandbox's environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "SECRET") || strings.Contains(env, "passed-by-user") {
		t.Errorf("the sandbox's environment holds the secret or the user's value:\n%s", env)
	}
	if b := string(cr.bundle); !strings.Contains(b, "HOSTROOTS") || !strings.Contains(b, string(cr.ca.CertPEM())) {
		t.Errorf("the bundle lacks the host's roots or the run's CA")
	}
}

// TestSeatbeltCredentials: a Seatbelt run with a credential (its network
// started here as on macOS; sandbox-exec itself is not run) gives the
// command the placeholder and the CA variables naming the bundle in its
// private /tmp, which the launcher writes itself (no helper on macOS),
// new and read-only.
func TestSeatbeltCredentials(t *testing.T) {
	dir := t.TempDir()
	roots := filepath.Join(dir, "roots.pem")
	if err := os.WriteFile(roots, []byte("-----BEGIN CERTIFICATE-----\nHOSTROOTS\n-----END CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSL_CERT_FILE", roots)
	t.Setenv("CRED_TOKEN", "ghp_SECRETsecretSECRETsecretSECRETsecret1")
	p := &policy.Policy{Mode: policy.ModeStandard, Backend: backend.Seatbelt, Workspace: dir, Read: []string{dir}, Write: []string{dir},
		Network:     policy.Network{Mode: policy.NetFiltered, Allow: []string{"*"}},
		Credentials: []policy.Credential{{Name: "gh", Hosts: []string{"api.github.com"}, Env: []string{"CRED_TOKEN"}}}}
	pl, err := plan.Build(p, []string{"true"}, plan.Options{Home: dir, Cwd: dir, StateDir: filepath.Join(dir, "state"), RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(pl.PrivateTmp, plan.CABundleName); pl.Net.CABundle != want {
		t.Fatalf("the bundle is planned at %q, want %q", pl.Net.CABundle, want)
	}
	run, nr, err := startSeatbeltNet(pl, Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	defer nr.close()
	env := strings.Join(run.Env, "\n")
	if !strings.Contains(env, "CRED_TOKEN=ghp_") || !strings.Contains(env, "SSL_CERT_FILE="+pl.Net.CABundle) || strings.Contains(env, "SECRET") {
		t.Errorf("the command's environment:\n%s", env)
	}
	if err := os.MkdirAll(pl.PrivateTmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := nr.writeBundle(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(pl.Net.CABundle)
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("the bundle: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(pl.Net.CABundle); !strings.Contains(string(b), "HOSTROOTS") || !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Errorf("the bundle lacks the host's roots or the run's CA")
	}
	if err := nr.writeBundle(); err == nil {
		t.Errorf("the bundle was written over an existing file")
	}
}
