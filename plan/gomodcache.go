package plan

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/sandboxcache"
	"github.com/cordon-sandbox/cordon/subpath"
)

// HostModCache is where the bwrap backend shows the host's Go module cache,
// read-only, when the sandbox's own is shown at the host's path (see
// goModRemap): the file:// module proxy GOPROXY tries first is its
// cache/download, and the modules linked into the sandbox's module cache
// (seedGoModules) point into it.
const HostModCache = "/run/cordon/host-modcache"

// Files in the sandbox cache about the modules seedGoModules linked.
const (
	// seedStamp records the go.sum (size, modification time, host module
	// cache) last seeded from, so an unchanged go.sum costs one stat.
	seedStamp = "go-mod-seeded"
	// seedLinks lists the links made, for unseedGoModules.
	seedLinks = "go-mod-links"
)

// goModRemap is, on the bwrap backend, the host module cache's path at
// which the sandbox's own module cache is shown (GOMODCACHE inside), or ""
// when the remap does not apply. The go command puts a package's
// directory in the key of its compiled output (unless -trimpath), so a
// dependency compiled from the sandbox's module cache at another path
// would never match what the host's build cache holds for it: at the
// host's path, a first build in a new workspace finds its dependencies
// compiled. The host's module cache is then hidden at its path, and shown
// read-only at HostModCache. It applies when the sandbox cache is
// writable, the policy neither sets nor passes GOMODCACHE, and the host's
// module cache is a readable directory that no write path, deny or
// deny_write rule reaches into.
func goModRemap(p *policy.Policy, opts Options, getenv func(string) (string, bool)) string {
	c := sandboxCache(p)
	if c == "" || policyNames(p, "GOMODCACHE") {
		return ""
	}
	mod := hostModCache(opts, getenv)
	if !filepath.IsAbs(mod) || !policy.CoveredBy(mod, p.Read) || policy.DeniedBy(p.Deny, mod) != "" ||
		policy.CoveredBy(mod, p.HostWrites()) || policy.Within(c, mod) {
		return ""
	}
	for _, rules := range [][]string{p.Deny, p.DenyWrite, p.HostWrites()} {
		for _, r := range rules {
			if filepath.IsAbs(r) && policy.Within(r, mod) {
				return ""
			}
		}
	}
	if fi, err := os.Stat(mod); err != nil || !fi.IsDir() {
		return ""
	}
	// The directory bwrap binds there must be one no sandbox can replace
	// (a link would bind whatever it names, writable): not one in the
	// sandbox cache, but its sibling in sandboxcache.ModCacheRoot, and a
	// real directory, not a link.
	if fi, err := os.Lstat(goModBindDir(c)); err != nil || !fi.IsDir() {
		return ""
	}
	return mod
}

// goModBindDir is the sandbox's Go module cache that the bwrap backend
// shows at the host's module cache path, for the sandbox cache c: in
// sandboxcache.ModCacheRoot, with c's name. Its parent is never visible
// inside a sandbox, so a sandbox can change what is in it but not replace
// it.
func goModBindDir(c string) string {
	return filepath.Join(sandboxcache.ModCacheRoot(filepath.Dir(c)), filepath.Base(c))
}

// bindGoModCache adds the mounts of goModRemap (the host's module cache at
// HostModCache, the sandbox's over the host's path) and links the
// workspace's modules in (seedGoModules). It returns the remapped path, or
// "".
func (b *bwrapBuilder) bindGoModCache(getenv func(string) (string, bool)) string {
	mod := goModRemap(b.p, b.opts, getenv)
	if mod == "" {
		return ""
	}
	src, err := filepath.EvalSymlinks(mod)
	if err != nil {
		return ""
	}
	c := sandboxCache(b.p)
	b.add(opRead, src, HostModCache)
	b.add(opWrite, goModBindDir(c), mod)
	b.plan.Notes = append(b.plan.Notes, fmt.Sprintf("the sandbox's module cache is shown at %s (GOMODCACHE), so dependencies the host compiled are found in its build cache; the host's module cache is at %s, read-only", mod, HostModCache))
	if policy.DeniedBy(b.p.Deny, filepath.Join(b.p.Workspace, "go.sum")) == "" {
		seedGoModules(goModBindDir(c), c, b.p.Workspace, src)
	}
	return mod
}

// remapGoEnv rewrites env for a remapped module cache mod: GOMODCACHE, if
// it is the sandbox's, becomes mod, and a file:// GOPROXY entry for mod's
// download cache (hidden at its path) points into HostModCache.
func remapGoEnv(env []string, c, mod string) {
	dl := "file://" + filepath.Join(mod, "cache", "download")
	for i, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case "GOMODCACHE":
			if v == filepath.Join(c, goModDir) {
				env[i] = k + "=" + mod
			}
		case "GOPROXY":
			parts := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' })
			for _, part := range parts {
				if strings.TrimSuffix(part, "/") == dl {
					v = strings.Replace(v, part, "file://"+HostModCache+"/cache/download", 1)
				}
			}
			env[i] = k + "=" + v
		}
	}
}

// seedGoModules links into the sandbox's module cache modDir each
// module version the workspace's go.sum names that the host's module cache
// (hostMod) holds unpacked and modDir does not: its directory becomes a
// link to the read-only one at HostModCache, and its .ziphash (which tells
// the go command the directory is complete) is copied. The go command
// then uses the host's copy instead of unpacking the module again in every
// new workspace: no time, no disk. It checks the .ziphash against go.sum
// as for any module, and the host's files cannot be changed through the
// link. The links resolve only inside a bwrap sandbox.
//
// Sandboxes write modDir, the sandbox cache c (where the stamp and the
// list of links are kept) and the workspace: every file is reached through
// an os.Root on them, so no link a sandbox left there takes a read or a
// write outside, and go.sum counts only as a regular file in the
// workspace (not a link to a file the sandbox may not read).
func seedGoModules(modDir, c, workspace, hostMod string) {
	wr, err := os.OpenRoot(workspace)
	if err != nil {
		return
	}
	defer wr.Close()
	lfi, err := wr.Lstat("go.sum")
	if err != nil || !lfi.Mode().IsRegular() || lfi.Size() > 16<<20 {
		return
	}
	f, err := wr.Open("go.sum")
	if err != nil {
		return
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, lfi) {
		f.Close()
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, 16<<20))
	f.Close()
	if err != nil {
		return
	}
	cr, err := os.OpenRoot(c)
	if err != nil {
		return
	}
	defer cr.Close()
	stamp := fmt.Sprintf("%d %d %s\n", fi.Size(), fi.ModTime().UnixNano(), hostMod)
	if b, err := readRegularIn(cr, seedStamp, 64<<10); err == nil && string(b) == stamp {
		return
	}
	r, err := os.OpenRoot(modDir)
	if err != nil {
		return
	}
	defer r.Close()
	var made []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || strings.HasSuffix(f[1], "/go.mod") {
			continue
		}
		modPath, ok1 := escapeModPath(f[0])
		ver, ok2 := escapeModVersion(f[1])
		if !ok1 || !ok2 {
			continue
		}
		if linkModule(r, hostMod, modPath, ver) {
			made = append(made, modPath+"@"+ver)
		}
	}
	if len(made) > 0 {
		if f, err := cr.OpenFile(seedLinks, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			fmt.Fprintln(f, strings.Join(made, "\n"))
			f.Close()
		}
	}
	writeFileIn(cr, seedStamp, []byte(stamp))
}

// linkModule links module modPath@ver (both escaped) into r from the
// host's module cache, when the host has it complete and r has nothing
// there yet.
func linkModule(r *os.Root, hostMod, modPath, ver string) bool {
	dir := modPath + "@" + ver
	ziphash := path.Join("cache", "download", modPath, "@v", ver+".ziphash")
	if _, err := r.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if fi, err := os.Lstat(filepath.Join(hostMod, filepath.FromSlash(dir))); err != nil || !fi.IsDir() {
		return false
	}
	if _, err := os.Lstat(filepath.Join(hostMod, filepath.FromSlash(dir)+".partial")); err == nil {
		return false // the host's go command is unpacking it
	}
	hash, err := readRegular(filepath.Join(hostMod, filepath.FromSlash(ziphash)), 4<<10)
	if err != nil || !bytes.HasPrefix(hash, []byte("h1:")) {
		return false
	}
	if _, err := r.Lstat(ziphash); errors.Is(err, fs.ErrNotExist) {
		if r.MkdirAll(path.Dir(ziphash), 0o755) != nil {
			return false
		}
		f, err := r.OpenFile(ziphash, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return false
		}
		_, err = f.Write(hash)
		if cerr := f.Close(); err != nil || cerr != nil {
			r.Remove(ziphash)
			return false
		}
	}
	if r.MkdirAll(path.Dir(dir), 0o755) != nil {
		return false
	}
	return r.Symlink(HostModCache+"/"+dir, dir) == nil
}

// unseedGoModules removes from the sandbox cache c's own module cache
// the links an earlier cordon made there (links into HostModCache resolve
// only inside a bwrap sandbox; the go command on the Landlock-only backend
// would fail on them). Links are now made only in goModBindDir, which the
// Landlock-only backend does not use; this clears caches from before.
func unseedGoModules(c string) {
	cr, err := os.OpenRoot(c)
	if err != nil {
		return
	}
	defer cr.Close()
	data, err := readRegularIn(cr, seedLinks, 16<<20)
	if err != nil {
		return
	}
	if r, err := cr.OpenRoot(goModDir); err == nil {
		for _, dir := range strings.Split(string(data), "\n") {
			if dir == "" || !fs.ValidPath(dir) {
				continue
			}
			if t, err := r.Readlink(dir); err == nil && subpath.Below(t, HostModCache) {
				r.Remove(dir)
			}
		}
		r.Close()
	}
	cr.Remove(seedStamp)
	cr.Remove(seedLinks)
}

// escapeModPath checks a module path from go.sum and escapes it as the
// module cache names it (an upper-case letter becomes "!" and the letter
// in lower case). Only plain paths pass: elements of letters, digits and
// "-._~", none empty, none starting or ending with a dot.
func escapeModPath(p string) (string, bool) {
	if p == "" || len(p) > 512 {
		return "", false
	}
	for _, elem := range strings.Split(p, "/") {
		if elem == "" || elem[0] == '.' || elem[len(elem)-1] == '.' {
			return "", false
		}
	}
	return escapeModChars(p, "-._~/")
}

// escapeModVersion checks and escapes a version: "v" then letters, digits
// and "-.+".
func escapeModVersion(v string) (string, bool) {
	if len(v) < 2 || v[0] != 'v' || len(v) > 256 {
		return "", false
	}
	return escapeModChars(v, "-.+")
}

func escapeModChars(s, punct string) (string, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune(punct, r):
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
		default:
			return "", false
		}
	}
	return b.String(), true
}
