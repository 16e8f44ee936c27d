//go:build linux || darwin

package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/host/toolenv"
	"github.com/cordon-sandbox/cordon/internal/net/credential"
	"github.com/cordon-sandbox/cordon/internal/net/netrule"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// credRun is the host side of a run's credentials (plan.Net.Credentials):
// the secrets, resolved on the host, and their per-run placeholders (the
// proxy's bindings), the run's CA, and what the sandbox gets instead of
// the secrets: variables holding the placeholders and the trust bundle.
type credRun struct {
	bindings []*credential.Binding
	ca       *credential.CA
	// env are the NAME=VALUE variables the command gets: placeholders and
	// the CA variables.
	env []string
	// bundle is the trust bundle written at plan.Net.CABundle.
	bundle []byte
}

// commandTimeout bounds a credential's command (gh auth token).
const commandTimeout = 20 * time.Second

// maxSecret bounds a secret read from a command's output.
const maxSecret = 64 << 10

// systemBundles are where the host's roots are, when SSL_CERT_FILE does
// not say (Go's list for Linux, and macOS's /etc/ssl/cert.pem).
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// newCredRun resolves n's credentials on the host and makes their
// placeholders and the run's CA; nil when n has none. Its errors name the
// credential and where its secret was looked for, never a value.
func newCredRun(n *plan.Net) (*credRun, error) {
	if n == nil || len(n.Credentials) == 0 {
		return nil, nil
	}
	if n.CABundle == "" {
		return nil, errors.New("credentials need cordon's proxy to see their requests, which this backend cannot give the command a trust bundle for; run where bubblewrap or the Landlock-only backend works")
	}
	home, _ := os.UserHomeDir()
	cr := &credRun{}
	var hosts []string
	for _, c := range n.Credentials {
		secret, err := resolveSecret(c, home)
		if err != nil {
			return nil, err
		}
		ph, err := credential.Placeholder(secret)
		if err != nil {
			return nil, fmt.Errorf("credential %s: %w", c.Name, err)
		}
		set, err := netrule.Compile(c.Hosts, nil)
		if err != nil {
			return nil, fmt.Errorf("credential %s: %w", c.Name, err)
		}
		cr.bindings = append(cr.bindings, &credential.Binding{
			Name: c.Name, Hosts: set, Placeholder: ph, Secret: secret,
			Headers: c.Headers, Methods: c.Methods, Paths: c.Paths,
		})
		for _, v := range plan.CredentialVars(c) {
			cr.env = append(cr.env, v+"="+ph)
		}
		for _, h := range c.Hosts {
			r, err := netrule.Parse(h)
			if err != nil {
				return nil, fmt.Errorf("credential %s: %w", c.Name, err)
			}
			hosts = append(hosts, r.Host)
		}
	}
	ca, err := credential.NewCA(hosts)
	if err != nil {
		return nil, err
	}
	cr.ca = ca
	roots, err := hostRoots()
	if err != nil {
		return nil, err
	}
	cr.bundle = append(append(roots, '\n'), ca.CertPEM()...)
	for _, v := range plan.CAVars {
		cr.env = append(cr.env, v+"="+n.CABundle)
	}
	cr.env = append(cr.env, plan.CredentialGitEnv(n.Credentials)...)
	return cr, nil
}

// hostRoots are the host's trusted roots, PEM: $SSL_CERT_FILE's (cordon's
// own environment), else the first system bundle found.
func hostRoots() ([]byte, error) {
	paths := systemBundles
	if f := os.Getenv("SSL_CERT_FILE"); f != "" {
		paths = []string{f}
	}
	for _, p := range paths {
		data, err := config.ReadFile(p, config.ReadOptions{})
		if err == nil {
			return data, nil
		}
	}
	return nil, fmt.Errorf("credentials: no trusted roots of this host found (%s) to give the command beside the run's CA; set SSL_CERT_FILE", strings.Join(paths, ", "))
}

// resolveSecret finds c's secret on the host: the first of its variables
// set, its file, ~/.npmrc's token or ~/.netrc's password for one of its
// hosts, its command's output.
func resolveSecret(c policy.Credential, home string) (string, error) {
	var tried []string
	for _, v := range c.Env {
		if s := strings.TrimSpace(os.Getenv(v)); s != "" {
			return s, nil
		}
		tried = append(tried, "$"+v+" is not set")
	}
	if c.File != "" {
		data, err := config.ReadFile(c.File, config.ReadOptions{})
		if s := strings.TrimSpace(string(data)); err == nil && s != "" {
			return s, nil
		}
		tried = append(tried, c.File+" is missing or empty")
	}
	for _, source := range []struct {
		on   bool
		what string
		get  func(home, host string, getenv func(string) (string, bool)) (string, bool)
	}{
		{c.Npmrc, "~/.npmrc has no _authToken for", toolenv.NpmToken},
		{c.Netrc, "~/.netrc has no password for", toolenv.NetrcPassword},
	} {
		if !source.on {
			continue
		}
		for _, h := range c.Hosts {
			r, err := netrule.Parse(h)
			if err != nil || strings.Contains(r.Host, "*") {
				continue
			}
			if s, ok := source.get(home, r.Host, os.LookupEnv); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s), nil
			}
		}
		tried = append(tried, source.what+" "+strings.Join(c.Hosts, ", "))
	}
	if len(c.Command) > 0 {
		s, err := commandSecret(c.Command)
		if err == nil {
			return s, nil
		}
		tried = append(tried, err.Error())
	}
	return "", fmt.Errorf("credential %s: no secret: %s; set one, or drop the credential", c.Name, strings.Join(tried, ", "))
}

// commandSecret runs argv (no shell) with cordon's own environment and
// returns its output, trimmed. Its error never holds the output.
func commandSecret(argv []string) (string, error) {
	shown := "`" + strings.Join(argv, " ") + "`"
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: maxSecret}
	cmd.Stderr = io.Discard
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s failed (%s)", shown, ee.ProcessState)
		}
		if errors.Is(err, exec.ErrNotFound) {
			return "", fmt.Errorf("%s: %s is not installed", shown, argv[0])
		}
		return "", fmt.Errorf("%s could not run", shown)
	}
	s := strings.TrimSpace(out.String())
	if s == "" || strings.ContainsAny(s, "\n\r") {
		return "", fmt.Errorf("%s printed no single-line secret", shown)
	}
	return s, nil
}

// limitedWriter keeps at most n bytes.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	if k > 0 {
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// mergeEnv returns env with the credentials' variables in place of the
// same names.
func (cr *credRun) mergeEnv(env []string) []string {
	if cr == nil {
		return env
	}
	names := map[string]bool{}
	for _, kv := range cr.env {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !names[name] {
			out = append(out, kv)
		}
	}
	out = append(out, cr.env...)
	slices.Sort(out)
	return out
}
