//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/sandboxcache"
	"github.com/cordon-sandbox/cordon/policy"
)

// goFixture is a fake home with a workspace, the host's Go caches and a
// policy with a writable sandbox cache, as plan's tests build them.
type goFixture struct {
	t                                 *testing.T
	home, ws, cache, hostMod, hostSum string
	stateDir                          string
	pol                               *policy.Policy
}

func newGoFixture(t *testing.T) *goFixture {
	t.Helper()
	dir := t.TempDir()
	f := &goFixture{t: t, home: filepath.Join(dir, "home"), stateDir: filepath.Join(dir, "state")}
	f.ws = filepath.Join(f.home, "proj")
	f.cache = filepath.Join(f.home, ".cache", "cordon", "sandbox", "abc")
	f.hostMod = filepath.Join(f.home, "go", "pkg", "mod")
	f.hostSum = filepath.Join(f.home, "go", "pkg", "sumdb")
	hostBuild := filepath.Join(f.home, ".cache", "go-build")
	for _, d := range []string{f.ws, hostBuild, filepath.Join(f.hostMod, "cache", "download")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.pol = &policy.Policy{
		Mode:         policy.ModeStandard,
		Workspace:    f.ws,
		Read:         []string{"/usr", "/etc", f.ws, hostBuild, f.hostMod},
		Write:        []string{f.ws, "/tmp", f.cache},
		SandboxCache: f.cache,
		Network:      policy.Network{Mode: policy.NetDeny},
		Env:          policy.Env{Pass: []string{"PATH"}, Set: map[string]string{}},
	}
	return f
}

// plan builds the fixture's plan for go build on backend b, with no
// bubblewrap needed (the host's facts are given).
func (f *goFixture) plan(b backend.Name) *plan.Plan {
	f.t.Helper()
	p := *f.pol
	p.Backend = b
	env := map[string]string{"PATH": "/usr/bin:/bin"}
	pl, err := plan.Build(&p, []string{"go", "build"}, plan.Options{Home: f.home, Cwd: f.ws, StateDir: f.stateDir,
		Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		Host:   plan.Host{Bwrap: "/opt/fake/bin/bwrap", LandlockABI: 6, Helper: "/opt/fake/bin/cordon-helper", HelperSibling: true}})
	if err != nil {
		f.t.Fatal(err)
	}
	return pl
}

// TestPrepareSandboxCache: the launcher creates what the plan only names:
// the sandbox cache, private, with its workspace recorded, its module
// cache, and cordon's state directory with the masks bwrap binds; plan.Build
// itself created none of them.
func TestPrepareSandboxCache(t *testing.T) {
	f := newGoFixture(t)
	pl := f.plan(backend.Bwrap)
	for _, d := range []string{f.cache, f.stateDir} {
		if _, err := os.Lstat(d); err == nil {
			t.Fatalf("plan.Build created %s", d)
		}
	}
	if err := Prepare(pl); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(f.cache); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("sandbox cache not created private: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(f.cache, plan.GoModDir)); err != nil || !fi.IsDir() {
		t.Errorf("module cache not created: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(f.cache, sandboxcache.RecordName)); err != nil || !strings.Contains(string(b), f.ws) {
		t.Errorf("workspace not recorded in the cache: %q, %v", b, err)
	}
	for _, m := range []struct {
		name string
		dir  bool
		mode os.FileMode
	}{{"deny-file", false, 0}, {"deny-dir", true, 0}, {"empty-file", false, 0o444}, {"empty-dir", true, 0o555}, {"commondir", false, 0o444}} {
		fi, err := os.Lstat(filepath.Join(f.stateDir, m.name))
		if err != nil || fi.IsDir() != m.dir || fi.Mode().Perm() != m.mode {
			t.Errorf("state file %s: %v, %v; want dir %v mode %o", m.name, fi, err, m.dir, m.mode)
		}
	}
	// Every mask bwrap binds from the state directory now exists.
	for i, a := range pl.Argv {
		if a == "--ro-bind" && i+1 < len(pl.Argv) && strings.HasPrefix(pl.Argv[i+1], f.stateDir+"/") {
			if _, err := os.Lstat(pl.Argv[i+1]); err != nil {
				t.Errorf("bwrap binds %s, which the preparations did not make: %v", pl.Argv[i+1], err)
			}
		}
	}
	// A changed commondir file is rewritten, a second time costs nothing.
	cd := filepath.Join(f.stateDir, "commondir")
	if err := os.Chmod(cd, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cd, []byte("/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Prepare(pl); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(cd); err != nil || string(b) != ".\n" {
		t.Errorf("commondir = %q, %v", b, err)
	}
	if fi, err := os.Lstat(cd); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("commondir mode: %v %v", fi, err)
	}
}

// TestPrepareFails: a preparation whose failure matters fails the run,
// saying what could not be created.
func TestPrepareFails(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []plan.Preparation{
		{Kind: plan.PrepDir, Path: filepath.Join(blocker, "state"), Mode: 0o700},
		{Kind: plan.PrepStateFile, Path: filepath.Join(blocker, "deny-file")},
		{Kind: "bogus", Path: dir},
	} {
		err := Prepare(&plan.Plan{Prepare: []plan.Preparation{p}})
		if err == nil || !strings.Contains(err.Error(), p.Path) {
			t.Errorf("%s %s: error %v, want one naming the path", p.Kind, p.Path, err)
		}
	}
}

// TestSumdbSeed: the sandbox's GOPATH/pkg/sumdb/NAME/latest starts as the
// host's, once: a tree head the sandbox already has is kept, and a host
// file that is a link is not followed.
func TestSumdbSeed(t *testing.T) {
	f := newGoFixture(t)
	cache, hostSum := f.cache, f.hostSum
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(hostSum, "sum.example", "latest"), "host tree head")
	write(filepath.Join(hostSum, "kept.example", "latest"), "host tree head")
	write(filepath.Join(cache, "gopath", "pkg", "sumdb", "kept.example", "latest"), "sandbox tree head")
	write(filepath.Join(f.home, "secret"), "not a tree head")
	if err := os.MkdirAll(filepath.Join(hostSum, "link.example"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(f.home, "secret"), filepath.Join(hostSum, "link.example", "latest")); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	sandboxSum := filepath.Join(cache, "gopath", "pkg", "sumdb")
	for name, want := range map[string]string{"sum.example": "host tree head", "kept.example": "sandbox tree head", "link.example": ""} {
		b, err := os.ReadFile(filepath.Join(sandboxSum, name, "latest"))
		if string(b) != want || (want == "" && err == nil) {
			t.Errorf("sandbox's %s/latest = %q, %v; want %q", name, b, err, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(hostSum, "sum.example", "latest")); string(b) != "host tree head" {
		t.Errorf("the host's tree head changed: %q", b)
	}
}

// seedFixture is a host module cache with three module versions (one
// complete, one without its .ziphash, one being unpacked) and a workspace
// go.sum naming them and a few paths that must never become paths.
func seedFixture(t *testing.T, hostMod, ws string) {
	t.Helper()
	w := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w(filepath.Join(hostMod, "example.com", "!foo@v1.0.0", "foo.go"), "package foo")
	w(filepath.Join(hostMod, "cache", "download", "example.com", "!foo", "@v", "v1.0.0.ziphash"), "h1:foohash=")
	w(filepath.Join(hostMod, "example.com", "nohash@v1.0.0", "x.go"), "package x")
	w(filepath.Join(hostMod, "example.com", "partial@v1.0.0", "x.go"), "package x")
	w(filepath.Join(hostMod, "example.com", "partial@v1.0.0.partial"), "")
	w(filepath.Join(hostMod, "cache", "download", "example.com", "partial", "@v", "v1.0.0.ziphash"), "h1:p=")
	w(filepath.Join(ws, "go.sum"), `example.com/Foo v1.0.0 h1:foohash=
example.com/Foo v1.0.0/go.mod h1:modhash=
example.com/nohash v1.0.0 h1:x=
example.com/partial v1.0.0 h1:p=
../../escape v1.0.0 h1:x=
example.com/a/../../b v1.0.0 h1:x=
/abs v1.0.0 h1:x=
example.com/Foo ../v1 h1:x=
`)
}

// TestSeedGoModules: on the bwrap backend, each module of the workspace's
// go.sum that the host's module cache holds complete is linked into
// bwrap's module cache (policy.GoModCacheDir, beside the sandbox cache;
// to its read-only view at plan.HostModCache), with its .ziphash; nothing
// else is, nothing is created outside that module cache, an unchanged
// go.sum is not read again, and the Landlock-only backend's module cache
// (in the sandbox cache) gets no link (they would dangle there).
func TestSeedGoModules(t *testing.T) {
	f := newGoFixture(t)
	seedFixture(t, f.hostMod, f.ws)
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	cache, hostMod := f.cache, f.hostMod
	own := policy.GoModCacheDir(cache)
	link := filepath.Join(own, "example.com", "!foo@v1.0.0")
	if target, err := os.Readlink(link); err != nil || target != plan.HostModCache+"/example.com/!foo@v1.0.0" {
		t.Fatalf("link %s -> %q, %v", link, target, err)
	}
	if b, err := os.ReadFile(filepath.Join(own, "cache", "download", "example.com", "!foo", "@v", "v1.0.0.ziphash")); err != nil || string(b) != "h1:foohash=" {
		t.Errorf("ziphash %q, %v", b, err)
	}
	for _, not := range []string{"example.com/nohash@v1.0.0", "example.com/partial@v1.0.0"} {
		if _, err := os.Lstat(filepath.Join(own, not)); err == nil {
			t.Errorf("%s linked", not)
		}
	}
	// The hostile lines made nothing anywhere.
	for dir, want := range map[string]string{own: "cache example.com go-mod-links go-mod-seeded", filepath.Dir(cache): "abc", filepath.Dir(filepath.Dir(cache)): "gomod sandbox", filepath.Dir(own): "abc"} {
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s holds %q, want %q", dir, got, want)
		}
	}

	// An unchanged go.sum is not read again: a removed link stays removed.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Error("go.sum was seeded again though it did not change")
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(f.ws, "go.sum"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Readlink(link); err != nil {
		t.Errorf("a changed go.sum was not seeded again: %v", err)
	}

	// The Landlock-only backend's module cache is the one in the sandbox
	// cache: no link there.
	if err := Prepare(f.plan(backend.Landlock)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cache, plan.GoModDir, "example.com", "!foo@v1.0.0")); err == nil {
		t.Error("a link into plan.HostModCache is in the Landlock-only backend's module cache")
	}
	if _, err := os.Stat(filepath.Join(hostMod, "example.com", "!foo@v1.0.0", "foo.go")); err != nil {
		t.Errorf("the host's module was touched: %v", err)
	}
}

// TestSeedGoModulesLinkedCache: a link a sandbox left in its module cache
// is never followed: nothing is created where it points.
func TestSeedGoModulesLinkedCache(t *testing.T) {
	f := newGoFixture(t)
	cache := f.cache
	seedFixture(t, f.hostMod, f.ws)
	outside := filepath.Join(f.home, "outside")
	for _, d := range []string{outside, policy.GoModCacheDir(cache)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"example.com", "cache"} {
		if err := os.Symlink(outside, filepath.Join(policy.GoModCacheDir(cache), l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("seeding wrote through a link the sandbox left: %v", ents)
	}
}

// TestEscapeModPath: module paths and versions from go.sum become module
// cache names only when they are plain.
func TestEscapeModPath(t *testing.T) {
	tests := []struct {
		path, ver string
		want      string // "" for refused
	}{
		{"github.com/BurntSushi/toml", "v1.2.3", "github.com/!burnt!sushi/toml@v1.2.3"},
		{"golang.org/x/mod", "v0.30.1-0.20260813213631-9239cba97fbe", "golang.org/x/mod@v0.30.1-0.20260813213631-9239cba97fbe"},
		{"example.com/m", "v2.0.0+incompatible", "example.com/m@v2.0.0+incompatible"},
		{"example.com/m", "V1.0.0", ""},
		{"example.com/../x", "v1.0.0", ""},
		{"/abs", "v1.0.0", ""},
		{"example.com//x", "v1.0.0", ""},
		{"example.com/.hidden", "v1.0.0", ""},
		{"example.com/x", "v1/../../y", ""},
		{"example.com/x y", "v1.0.0", ""},
		{"", "v1.0.0", ""},
	}
	for _, tc := range tests {
		p, ok1 := escapeModPath(tc.path)
		v, ok2 := escapeModVersion(tc.ver)
		got := ""
		if ok1 && ok2 {
			got = p + "@" + v
		}
		if got != tc.want {
			t.Errorf("escape(%q, %q) = %q, want %q", tc.path, tc.ver, got, tc.want)
		}
	}
}

// TestSeedPlantedLinks: the links a sandbox can leave where the launcher
// writes before the next run (the stamp's temporary file and the list of
// links in the module cache, the sandbox's GOPATH in its cache) and a
// go.sum that is a link to a file the sandbox may not read take no write
// and no read outside: the files they name stay as they were.
func TestSeedPlantedLinks(t *testing.T) {
	f := newGoFixture(t)
	seedFixture(t, f.hostMod, f.ws)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.hostSum, "sum.golang.org", "latest"), "host tree head")
	victims := map[string]string{}
	for _, name := range []string{"victim-stamp", "victim-links"} {
		victims[name] = filepath.Join(f.home, name)
		write(victims[name], "precious\n")
	}
	outDir := filepath.Join(f.home, "outdir")
	mod := policy.GoModCacheDir(f.cache)
	for _, d := range []string{outDir, mod, f.cache} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(mod, seedStamp+".cordon-tmp"): victims["victim-stamp"],
		filepath.Join(mod, seedLinks):               victims["victim-links"],
		filepath.Join(f.cache, "gopath"):            outDir,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if err := Prepare(f.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	for _, v := range victims {
		if b, err := os.ReadFile(v); err != nil || string(b) != "precious\n" {
			t.Errorf("%s was written through a link the sandbox left: %q, %v", v, b, err)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("the sumdb seed wrote through a linked gopath: %v", ents)
	}

	// A go.sum that is a link (to a file the sandbox may not read) is
	// not read: nothing is seeded from it.
	g := newGoFixture(t)
	seedFixture(t, g.hostMod, g.ws)
	secret := filepath.Join(g.home, "secret-go.sum")
	if err := os.Rename(filepath.Join(g.ws, "go.sum"), secret); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(g.ws, "go.sum")); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(g.plan(backend.Bwrap)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(policy.GoModCacheDir(g.cache), "example.com", "!foo@v1.0.0")); err == nil {
		t.Error("a go.sum that is a link was read")
	}
	if _, err := os.Lstat(filepath.Join(policy.GoModCacheDir(g.cache), seedStamp)); err == nil {
		t.Error("a go.sum that is a link was stamped")
	}
}

// TestStateFileAtOnce: runs that start at once all make the same state
// file (the resolv.conf of a first run, read-only); each must succeed and
// leave it whole. Written in place, one run's chmod to the read-only mode
// raced another's write: EACCES for a normal user.
func TestStateFileAtOnce(t *testing.T) {
	dir := t.TempDir()
	const content = "nameserver 127.0.0.1\noptions ndots:0\n"
	for round := range 30 {
		p := plan.Preparation{Kind: plan.PrepStateFile, Path: filepath.Join(dir, "resolv.conf"), Mode: 0o444, Content: content}
		if round%2 == 1 {
			// a changed file is rewritten by all of them at once
			if err := os.Chmod(p.Path, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p.Path, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		errs := make(chan error, 16)
		for range 16 {
			go func() { errs <- ensureStateFile(p) }()
		}
		for range 16 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		got, err := os.ReadFile(p.Path)
		fi, serr := os.Stat(p.Path)
		if err != nil || serr != nil || string(got) != content || fi.Mode().Perm() != 0o444 {
			t.Fatalf("round %d: %q (%v), %v %v", round, got, err, fi.Mode(), serr)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left beside it: %v", ents)
	}
}
