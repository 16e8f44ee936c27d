package plan

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

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
// go.sum that the host's module cache holds complete is linked into the
// sandbox's module cache (to its read-only view at HostModCache), with its
// .ziphash; nothing else is, nothing is created outside the sandbox's
// module cache, an unchanged go.sum is not read again, and the
// Landlock-only backend, whose module cache is another, gets no link
// (they would dangle there).
func TestSeedGoModules(t *testing.T) {
	p, opts, cache, _, hostMod := goPolicy(t)
	seedFixture(t, hostMod, p.Workspace)
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	own := goModBindDir(cache)
	link := filepath.Join(own, "example.com", "!foo@v1.0.0")
	if target, err := os.Readlink(link); err != nil || target != HostModCache+"/example.com/!foo@v1.0.0" {
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
	for dir, want := range map[string]string{own: "cache example.com", filepath.Dir(cache): "abc", filepath.Dir(filepath.Dir(cache)): "gomod sandbox", filepath.Dir(own): "abc"} {
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
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); err == nil {
		t.Error("go.sum was seeded again though it did not change")
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(filepath.Join(p.Workspace, "go.sum"), later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Readlink(link); err != nil {
		t.Errorf("a changed go.sum was not seeded again: %v", err)
	}

	// The Landlock-only backend's module cache is the one in the sandbox
	// cache: no link there.
	q := *p
	q.Backend = BackendLandlock
	if _, err := Build(&q, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(cache, "go-mod", "example.com", "!foo@v1.0.0")); err == nil {
		t.Error("a link into HostModCache is in the Landlock-only backend's module cache")
	}
	if _, err := os.Stat(filepath.Join(hostMod, "example.com", "!foo@v1.0.0", "foo.go")); err != nil {
		t.Errorf("the host's module was touched: %v", err)
	}
}

// TestSeedGoModulesLinkedCache: a link a sandbox left in its module cache
// is never followed: nothing is created where it points.
func TestSeedGoModulesLinkedCache(t *testing.T) {
	p, opts, cache, _, hostMod := goPolicy(t)
	seedFixture(t, hostMod, p.Workspace)
	outside := filepath.Join(opts.Home, "outside")
	for _, d := range []string{outside, goModBindDir(cache)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"example.com", "cache"} {
		if err := os.Symlink(outside, filepath.Join(goModBindDir(cache), l)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("seeding wrote through a link the sandbox left: %v", ents)
	}
}

// TestSeedGoModulesPlantedLinks: the links a sandbox can leave where the
// host writes before the next run (the stamp's temporary file, the list
// of links, the sumdb directory, a go.sum that is a link to a file the
// sandbox may not read) take no write and no read outside: the files they
// name stay as they were, and a module cache the sandbox replaced by a
// link is never bound.
func TestSeedGoModulesPlantedLinks(t *testing.T) {
	p, opts, cache, _, hostMod := goPolicy(t)
	seedFixture(t, hostMod, p.Workspace)
	victims := map[string]string{}
	for _, name := range []string{"victim-stamp", "victim-links", "victim-sumdb"} {
		v := filepath.Join(opts.Home, name)
		if err := os.WriteFile(v, []byte("precious\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		victims[name] = v
	}
	outDir := filepath.Join(opts.Home, "outdir")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The host's sumdb tree head, which prepareGoCache copies.
	hostSum := filepath.Join(filepath.Dir(filepath.Dir(hostMod)), "pkg", "sumdb", "sum.golang.org")
	if err := os.MkdirAll(hostSum, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostSum, "latest"), []byte("go.sum database tree\n1\nhash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		filepath.Join(cache, seedStamp+".cordon-tmp"): victims["victim-stamp"],
		filepath.Join(cache, seedLinks):               victims["victim-links"],
		filepath.Join(cache, goPathDir):               outDir,
	} {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	for _, v := range victims {
		if b, err := os.ReadFile(v); err != nil || string(b) != "precious\n" {
			t.Errorf("%s was written through a link the sandbox left: %q, %v", v, b, err)
		}
	}
	if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
		t.Errorf("prepareGoCache wrote through a linked gopath: %v", ents)
	}

	// A go.sum that is a link: not read, nothing seeded from it.
	secret := filepath.Join(opts.Home, "secret-go.sum")
	sum, err := os.ReadFile(filepath.Join(p.Workspace, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, sum, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(p.Workspace, "go.sum")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(p.Workspace, "go.sum")); err != nil {
		t.Fatal(err)
	}
	c2 := goModBindDir(cache)
	os.RemoveAll(c2)
	if _, err := Build(p, []string{"go", "build"}, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(c2, "example.com", "!foo@v1.0.0")); err == nil {
		t.Error("a go.sum that is a link was read")
	}

	// A module cache replaced by a link is not bound.
	if err := os.RemoveAll(c2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(opts.Home, c2); err != nil {
		t.Fatal(err)
	}
	pl, err := Build(p, []string{"go", "build"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pl.Argv, c2) {
		t.Errorf("a module cache that is a link is bound:\n%s", strings.Join(pl.Argv, " "))
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
