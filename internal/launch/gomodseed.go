package launch

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

	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/internal/subpath"
)

// Files in the sandbox cache about the modules seedGoModules linked.
const (
	// seedStamp records the go.sum (size, modification time, host module
	// cache) last seeded from, so an unchanged go.sum costs one stat.
	seedStamp = "go-mod-seeded"
	// seedLinks lists the links made, for unseedGoModules.
	seedLinks = "go-mod-links"
)

// seedGoModules links into the module cache modDir (bwrap's,
// policy.GoModCacheDir) each module version the workspace's go.sum names
// that the host's module cache (hostMod) holds unpacked and modDir does
// not: its directory becomes a link to the read-only one at
// plan.HostModCache, and its .ziphash (which tells the go command the
// directory is complete) is copied. The go command then uses the host's
// copy instead of unpacking the module again in every new workspace: no
// time, no disk. It checks the .ziphash against go.sum as for any module,
// and the host's files cannot be changed through the link. The links
// resolve only inside a bwrap sandbox.
//
// Sandboxes write modDir (where the stamp and the list of links are kept
// too) and the workspace: every file there is reached through an os.Root,
// so no link a sandbox left takes a read or a write outside; go.sum counts
// only as a regular file directly in the workspace (not a link to a file
// the sandbox may not read), and module paths and versions are checked
// before they become paths. Errors only mean fewer links.
func seedGoModules(modDir, workspace, goSum, hostMod string) {
	wr, err := os.OpenRoot(workspace)
	if err != nil {
		return
	}
	defer wr.Close()
	lfi, err := wr.Lstat(goSum)
	if err != nil || !lfi.Mode().IsRegular() || lfi.Size() > 16<<20 {
		return
	}
	f, err := wr.Open(goSum)
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
	r, err := os.OpenRoot(modDir)
	if err != nil {
		return
	}
	defer r.Close()
	stamp := fmt.Sprintf("%d %d %s\n", fi.Size(), fi.ModTime().UnixNano(), hostMod)
	if b, err := readRegularIn(r, seedStamp, 64<<10); err == nil && string(b) == stamp {
		return
	}
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
		if f, err := r.OpenFile(seedLinks, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			fmt.Fprintln(f, strings.Join(made, "\n"))
			f.Close()
		}
	}
	writeFileIn(r, seedStamp, []byte(stamp))
}

// writeFileIn writes name in r atomically: a new temporary file (never
// one a sandbox left there, nor through a link), then a rename over name.
func writeFileIn(r *os.Root, name string, data []byte) {
	tmp := name + ".cordon-tmp"
	r.Remove(tmp)
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err != nil || cerr != nil || r.Rename(tmp, name) != nil {
		r.Remove(tmp)
	}
}

// readRegularIn reads name in r: a regular file (not a link) of at most
// limit bytes.
func readRegularIn(r *os.Root, name string, limit int64) ([]byte, error) {
	fi, err := r.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", name, limit)
	}
	f, err := r.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
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
	return r.Symlink(plan.HostModCache+"/"+dir, dir) == nil
}

// unseedGoModules removes from the sandbox cache c's own module cache
// (GoModDir, the Landlock-only backend's) the links an earlier cordon
// made there: they resolve only inside a bwrap sandbox, and the go command
// would fail on them. Links are now made only in bwrap's module cache
// (policy.GoModCacheDir); this clears caches from before. Only links into
// plan.HostModCache are removed, through an os.Root on c.
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
	if r, err := cr.OpenRoot(plan.GoModDir); err == nil {
		for _, dir := range strings.Split(string(data), "\n") {
			if dir == "" || !fs.ValidPath(dir) {
				continue
			}
			if t, err := r.Readlink(dir); err == nil && subpath.Below(t, plan.HostModCache) {
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

// seedSumdb copies the host's checksum database tree heads
// (from/NAME/latest, from the host's GOPATH/pkg/sumdb) to the sandbox's
// (gopath/pkg/sumdb/NAME/latest in the sandbox cache c), each where the
// sandbox has none yet, so that the sandbox verifies modules against a
// tree at least as new as the one the host has seen (a database showing
// the sandbox another history is caught) and needs no network to learn
// one. A host file that is a link is not followed; sandboxes write c, so
// it is reached only through an os.Root. Errors are ignored: the go
// command works without it.
func seedSumdb(c, from string) {
	names, err := readDirNames(from)
	if err != nil {
		return
	}
	cr, err := os.OpenRoot(c)
	if err != nil {
		return
	}
	defer cr.Close()
	for _, name := range names {
		if !fs.ValidPath(name) || strings.Contains(name, "/") {
			continue
		}
		dir := path.Join("gopath", "pkg", "sumdb", name)
		latest := path.Join(dir, "latest")
		if _, err := cr.Lstat(latest); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		b, err := readRegular(filepath.Join(from, name, "latest"), 64<<10)
		if err != nil || len(b) == 0 {
			continue
		}
		if cr.MkdirAll(dir, 0o700) != nil {
			continue
		}
		writeFileIn(cr, latest, b)
	}
}

func readDirNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// readRegular reads a regular file of at most limit bytes, not through a
// symlink.
func readRegular(path string, limit int64) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, limit)
	}
	return os.ReadFile(path)
}
