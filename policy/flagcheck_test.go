package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/config"
)

// TestTightenProfile: a workspace file may pick a profile at least as
// tight as the current one, never a looser or an incomparable one.
func TestTightenProfile(t *testing.T) {
	const tail = " cannot be set by a file inside the workspace: such files may only add restrictions; put it in ~/.config/cordon/config.yaml or pass --profile"
	for _, tc := range []struct {
		base, ws string // user config's and .cordon.yaml's profile ("" none)
		want     string // the resulting profile, or
		err      string // the error after "FILE:2: "
	}{
		{"", "minimal", "minimal", ""},
		{"", "ci", "ci", ""},
		{"", "untrusted", "untrusted", ""},
		{"", "development", "development", ""},
		{"ci", "untrusted", "untrusted", ""},
		{"ci", "minimal", "minimal", ""},
		{"ci", "development", "", "sandbox.profile: development (not as tight as the current ci; minimal or untrusted would be)" + tail},
		{"untrusted", "minimal", "", "sandbox.profile: minimal (not as tight as the current untrusted, and no other profile is)" + tail},
		{"minimal", "untrusted", "", "sandbox.profile: untrusted (not as tight as the current minimal, and no other profile is)" + tail},
		{"", "nope", "", "sandbox.profile must be one of minimal, development, ci, untrusted"},
	} {
		t.Run(tc.base+">"+tc.ws, func(t *testing.T) {
			f := newFixture(t)
			if tc.base != "" {
				f.userConfig("sandbox:\n  profile: " + tc.base + "\n")
			}
			path := f.wsConfig("sandbox:\n  profile: " + tc.ws + "\n")
			p, err := f.load(Options{})
			if tc.err != "" {
				if want := path + ":2: " + tc.err; err == nil || err.Error() != want {
					t.Fatalf("got %v\nwant %s", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Profile != tc.want {
				t.Errorf("profile %s, want %s", p.Profile, tc.want)
			}
			if tc.want == "untrusted" && p.Mode != ModeStrict {
				t.Errorf("untrusted from the workspace: mode %s, want strict", p.Mode)
			}
		})
	}
	// The flag's choice is what the workspace file is measured against.
	f := newFixture(t)
	f.wsConfig("sandbox:\n  profile: development\n")
	if _, err := f.load(Options{Flags: flags(func(l *config.Layer) { l.Profile = config.Ptr("ci") })}); err == nil || !strings.Contains(err.Error(), "not as tight as the current ci") {
		t.Errorf("--profile ci, .cordon.yaml development: %v", err)
	}
}

// TestAtLeastAsTight checks the order of the built-in profiles.
func TestAtLeastAsTight(t *testing.T) {
	tighter := map[string][]string{
		"minimal":     {"minimal", "development", "ci"},
		"development": {"development"},
		"ci":          {"development", "ci"},
		"untrusted":   {"development", "ci", "untrusted"},
	}
	for _, a := range Profiles() {
		var got []string
		for _, b := range Profiles() {
			if AtLeastAsTight(a, b) {
				got = append(got, b)
			}
		}
		if !reflect.DeepEqual(got, tighter[a]) {
			t.Errorf("%s is at least as tight as %q, want %q", a, got, tighter[a])
		}
	}
	if AtLeastAsTight("nope", "development") || AtLeastAsTight("minimal", "nope") {
		t.Error("an unknown profile compared as tight")
	}
}

// TestFlagPathErrors: an empty path flag, and a deny that hides the
// workspace (the command starts there), are one clear error.
func TestFlagPathErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(f *fixture, l *config.Layer)
		want string // with <WS> and <HOME> replaced
	}{
		{"empty deny", func(f *fixture, l *config.Layer) { l.Filesystem.Deny = []string{""} }, `--deny "": empty; give a path or a pattern such as **/.env`},
		{"blank deny-write", func(f *fixture, l *config.Layer) { l.Filesystem.DenyWrite = []string{" "} }, `--deny-write "": empty; give a path or a pattern such as **/.env`},
		{"empty allow-write", func(f *fixture, l *config.Layer) { l.Filesystem.Write = []string{""} }, `--allow-write "": empty; give a path`},
		{"empty allow-read", func(f *fixture, l *config.Layer) { l.Filesystem.Read = []string{""} }, `--allow-read "": empty; give a path`},
		{"empty socket", func(f *fixture, l *config.Layer) { l.UnixSockets = []string{""} }, `--allow-unix-socket "": empty; give a path`},
		{"deny .", func(f *fixture, l *config.Layer) { l.Filesystem.Deny = []string{"."} },
			`--deny ".": denies the workspace <WS> itself: the command runs in the workspace; deny paths inside it, or pass --workspace to run elsewhere`},
		{"deny workspace", func(f *fixture, l *config.Layer) { l.Filesystem.Deny = []string{f.ws + "/"} },
			`--deny "<WS>/": denies the workspace <WS> itself: the command runs in the workspace; deny paths inside it, or pass --workspace to run elsewhere`},
		{"deny parent", func(f *fixture, l *config.Layer) { l.Filesystem.Deny = []string{"~"} },
			`--deny "~": hides the workspace <WS>, which it contains: the command runs in the workspace; deny paths inside it, or pass --workspace to run elsewhere`},
		{"deny glob", func(f *fixture, l *config.Layer) { l.Filesystem.Deny = []string{"${HOME}/p*"} },
			`--deny "${HOME}/p*": hides the workspace <WS> (the pattern matches it or a directory above it): the command runs in the workspace; deny paths inside it, or pass --workspace to run elsewhere`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.load(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { tc.fn(f, l) })})
			want := strings.NewReplacer("<WS>", f.ws, "<HOME>", f.home).Replace(tc.want)
			if err == nil || err.Error() != want {
				t.Errorf("got %v\nwant %s", err, want)
			}
		})
	}
	f := newFixture(t)
	// Inside the workspace, or with the mode off, a deny is fine.
	for _, l := range []*config.Layer{
		flags(func(l *config.Layer) { l.Filesystem.Deny = []string{"sub", f.ws + "x"} }),
		flags(func(l *config.Layer) { l.Filesystem.Deny = []string{"."}; l.Mode = config.Ptr("off") }),
	} {
		if _, err := f.load(Options{SkipUserConfig: true, Flags: l}); err != nil {
			t.Errorf("deny %q (mode %v): %v", l.Filesystem.Deny, l.Mode, err)
		}
	}
	// A config file that denies the workspace is named with its line.
	path := f.userConfig("sandbox:\n  filesystem:\n    deny: [\"${PROJECT_DIR}\"]\n")
	if _, err := f.load(Options{}); err == nil || !strings.HasPrefix(err.Error(), path+":3: sandbox.filesystem.deny entry \"${PROJECT_DIR}\": denies the workspace") {
		t.Errorf("config denying the workspace: %v", err)
	}
}

// TestFlagPathWarnings: --allow-read and --allow-write values that do not
// do what they seem to get one warning each; others none.
func TestFlagPathWarnings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		read  []string
		write []string
		mode  string
		want  []string // with <WS> and <HOME> replaced
	}{
		{"relative, covered by the workspace", nil, []string{"out"}, "", []string{`--allow-write "out": relative to the current directory, it names <WS>/out`}},
		{"relative, existing", []string{"data"}, nil, "", []string{`--allow-read "data": relative to the current directory, it names <WS>/data`}},
		{"missing write", nil, []string{"~/gone"}, "", []string{`--allow-write "~/gone": <HOME>/gone does not exist, so this allows nothing: create it first`}},
		{"missing read", []string{"${HOME}/gone"}, nil, "", []string{`--allow-read "${HOME}/gone": <HOME>/gone does not exist, so this allows nothing: create it first`}},
		{"relative and missing", nil, []string{"../gone"}, "", []string{`--allow-write "../gone": relative to the current directory, it names <HOME>/gone; <HOME>/gone does not exist, so this allows nothing: create it first`}},
		{"denied read", []string{"~/.ssh"}, nil, "", []string{`--allow-read "~/.ssh": <HOME>/.ssh is denied (<HOME>/.ssh): the deny wins, so it stays unreadable`}},
		{"inside a denied directory", []string{"~/.ssh/config"}, nil, "", []string{`--allow-read "~/.ssh/config": <HOME>/.ssh/config is denied (<HOME>/.ssh): the deny wins, so it stays unreadable`}},
		{"denied write", nil, []string{"~/.aws"}, "", []string{`--allow-write "~/.aws": <HOME>/.aws is denied (<HOME>/.aws): the deny wins, so it stays neither readable nor writable`}},
		{"deny_write wins", nil, []string{"~/.local/bin"}, "", []string{`--allow-write "~/.local/bin": <HOME>/.local/bin is kept read-only (deny_write <HOME>/.local/bin): the deny wins`}},
		{"a read file a glob names", []string{"~/d/.env", "~/d/plain"}, nil, "", []string{`--allow-read "~/d/.env": <HOME>/d/.env is denied (**/.env): the deny wins, so it stays unreadable`}},
		{"fine", []string{"~/lib"}, []string{"~/out"}, "", nil},
		{"mode off", []string{"~/.ssh"}, []string{"gone"}, "off", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			for _, d := range []string{"lib", "out", ".ssh", ".aws", ".local/bin", "proj/data"} {
				if err := os.MkdirAll(filepath.Join(f.home, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			f.write(filepath.Join(f.home, "d", ".env"), "")
			f.write(filepath.Join(f.home, "d", "plain"), "")
			p := f.mustLoad(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) {
				l.Filesystem.Read = tc.read
				l.Filesystem.Write = tc.write
				if tc.mode != "" {
					l.Mode = config.Ptr(tc.mode)
				}
			})})
			var want []string
			for _, w := range tc.want {
				want = append(want, strings.NewReplacer("<WS>", f.ws, "<HOME>", f.home).Replace(w))
			}
			if !reflect.DeepEqual(p.Warnings, want) {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(p.Warnings, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// A config file's entries are the user's own business: no warnings.
	f := newFixture(t)
	f.userConfig("sandbox:\n  filesystem:\n    read: [\"${HOME}/gone\"]\n")
	if p := f.mustLoad(Options{}); len(p.Warnings) > 0 {
		t.Errorf("config file entries warned: %q", p.Warnings)
	}
}

// TestDenyGlobHidingWorkspaceAsBackends: the check that a deny entry hides
// the workspace matches absolute globs as the backends expand them
// (policy.DenyRule): "**" spans directories and matches the directory
// before it, braces are alternatives. filepath.Match, used here before,
// read "**" as "*" and braces literally, so these loaded and then hid the
// workspace (or all of it) in the run.
func TestDenyGlobHidingWorkspaceAsBackends(t *testing.T) {
	for _, deny := range []string{"${PROJECT_DIR}/**", "${HOME}/**/proj*", "${HOME}/{x,p*}"} {
		f := newFixture(t)
		_, err := f.load(Options{SkipUserConfig: true, Flags: flags(func(l *config.Layer) { l.Filesystem.Deny = []string{deny} })})
		want := fmt.Sprintf("--deny %q: hides the workspace %s (the pattern matches it or a directory above it)", deny, f.ws)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("--deny %q: got %v\nwant %s...", deny, err, want)
		}
	}
}
