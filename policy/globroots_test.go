package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// TestDenyGlobReadRoots: Load's policies search the workspace, the
// profiles' small tool configs (~/.gitconfig, ~/.config/git: git's
// credential store writes there) and the read paths a user adds, never the
// system directories or the profiles' tool caches (so the default run
// walks nothing large beyond the workspace).
func TestDenyGlobReadRoots(t *testing.T) {
	f := newFixture(t)
	h := func(rel string) string { return filepath.Join(f.home, rel) }
	cfg := []string{h(".gitconfig"), h(".config/git"), h(".config/cordon")}
	for _, tc := range []struct {
		name    string
		profile string
		read    []string
		write   []string
		deny    []string
		want    []string
	}{
		{name: "development", profile: ProfileDevelopment, want: append([]string{f.ws}, cfg...)},
		{name: "ci", profile: ProfileCI, want: append([]string{f.ws}, cfg...)},
		{name: "minimal (read-only workspace)", profile: ProfileMinimal, want: []string{f.ws}},
		{name: "untrusted", profile: ProfileUntrusted, want: []string{f.ws}},
		{name: "added directory and file", read: []string{h("d"), h(".env")}, want: append(append([]string{f.ws}, cfg...), h("d"), h(".env"))},
		{name: "named inside a system directory", read: []string{"/opt/proj", "/usr"}, want: append(append([]string{f.ws}, cfg...), "/opt/proj")},
		{name: "a tool cache named again", read: []string{h("go/pkg/mod"), h(".npm")}, want: append([]string{f.ws}, cfg...)},
		{name: "inside a tool cache", read: []string{h("go/pkg/mod/x")}, want: append(append([]string{f.ws}, cfg...), h("go/pkg/mod/x"))},
		{name: "inside the writable workspace", read: []string{filepath.Join(f.ws, "sub")}, want: append([]string{f.ws}, cfg...)},
		{name: "inside another write path", read: []string{h("out/in")}, write: []string{h("out")}, want: append([]string{f.ws}, cfg...)},
		{name: "the private /tmp", read: []string{"/tmp"}, want: append([]string{f.ws}, cfg...)},
		{name: "denied", read: []string{h(".ssh"), h("vault/k")}, deny: []string{h("vault")}, want: append([]string{f.ws}, cfg...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := f.mustLoad(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) {
				if tc.profile != "" {
					l.Profile = config.Ptr(tc.profile)
				}
				l.Filesystem.Read = tc.read
				l.Filesystem.Write = tc.write
				l.Filesystem.Deny = tc.deny
			})})
			if got := p.DenyGlobReadRoots(f.home); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DenyGlobReadRoots = %q\nwant %q\n(Read %q)", got, tc.want, p.Read)
			}
		})
	}
}

// TestDenyGlobReadRootsRepo: the work tree above a sub-directory workspace
// is searched like the workspace, even where a read path like it would not
// be (/etc kept in git by etckeeper, with the workspace /etc/nginx).
func TestDenyGlobReadRootsRepo(t *testing.T) {
	p := &Policy{
		Workspace: "/etc/nginx",
		Read:      append(append([]string{}, SystemReads...), "/etc/nginx", "/h/.npm"),
		Repo:      &Repo{Kind: "sub-directory", WorkTree: "/etc", Read: []string{"/etc"}},
	}
	want := []string{"/etc/nginx", "/etc"}
	if got := p.DenyGlobReadRoots("/h"); !reflect.DeepEqual(got, want) {
		t.Errorf("DenyGlobReadRoots = %q, want %q", got, want)
	}
}

// TestDenyGlobForFile: a read path that is a file is denied when a
// relative glob matches its name, or the name of what it links to; a
// directory or a missing path never is (a directory is searched instead).
func TestDenyGlobForFile(t *testing.T) {
	f := newFixture(t)
	p := &Policy{Deny: append(append([]string{}, DefaultDeny...), "/abs/.env", "config/*.json", "id_*")}
	h := func(rel string) string { return filepath.Join(f.home, rel) }
	for _, file := range []string{"d/.env", ".env.local", "x/secrets.json", "id_rsa", "config/app.json", "env", ".envrc", "control.txt", "vault/.env"} {
		f.write(h(file), "")
	}
	if err := os.MkdirAll(h("dir/.env"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h("vault/.env"), h("settings")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel, want string
	}{
		{"d/.env", "**/.env"},
		{".env.local", "**/.env.*"},
		{"x/secrets.json", "**/secrets.*"},
		{"id_rsa", "id_*"},
		{"settings", "**/.env"}, // a link to a .env
		{"config/app.json", ""}, // a name alone never matches a glob with a directory
		{"dir/.env", ""},        // a directory: searched, not denied whole
		{"missing/.env", ""},    // nothing to deny
		{"env", ""},
		{".envrc", ""},
		{"control.txt", ""},
	} {
		if got := p.DenyGlobForFile(h(tc.rel)); got != tc.want {
			t.Errorf("DenyGlobForFile(~/%s) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}
