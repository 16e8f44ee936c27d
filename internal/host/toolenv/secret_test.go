package toolenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSecrets: the tokens a credential can take from ~/.npmrc (its
// registry's _authToken, ${VAR} expanded) and ~/.netrc (the machine's
// password, else the default's).
func TestSecrets(t *testing.T) {
	home := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(home, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".npmrc", "registry=https://r.example/\n//r.example/:_authToken=TOK1\n//npm.corp.example:4873/:_authToken=${CORP}\n")
	write(".netrc", "machine upload.pypi.org login __token__ password pypi-TOK2\nmachine other.example login u password p\ndefault login x password DEF\n")
	env := map[string]string{"CORP": "TOK3"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		got   func() (string, bool)
		want  string
		found bool
	}{
		{func() (string, bool) { return NpmToken(home, "r.example", getenv) }, "TOK1", true},
		{func() (string, bool) { return NpmToken(home, "npm.corp.example", getenv) }, "TOK3", true},
		{func() (string, bool) { return NpmToken(home, "registry.npmjs.org", getenv) }, "", false},
		{func() (string, bool) { return NetrcPassword(home, "upload.pypi.org", getenv) }, "pypi-TOK2", true},
		{func() (string, bool) { return NetrcPassword(home, "unknown.example", getenv) }, "DEF", true},
	} {
		if got, ok := tc.got(); got != tc.want || ok != tc.found {
			t.Errorf("got %q %v, want %q %v", got, ok, tc.want, tc.found)
		}
	}
}
