// Package sandboxcache keeps the per-workspace sandbox caches
// (${SANDBOX_CACHE}, see policy.SandboxCache): the record of the workspace
// each belongs to, the list with their sizes, and their removal.
//
// A cache is written by sandboxes, so nothing in it is trusted: a record
// counts only when the cache's name is the hash of the workspace it names,
// sizes are counted without following symbolic links, and removal works
// through an os.Root opened on the caches' directory, so no link inside a
// cache can take it anywhere else.
//
// It owns the records, the listing and the removal. It must not decide
// where a cache lives (policy.SandboxCache does) or remove anything
// outside the caches' directory.
package sandboxcache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// RecordName is the file in a sandbox cache that holds its workspace's
// path.
const RecordName = "workspace"

// State says whether a cache's workspace still exists.
type State string

// States of a cache.
const (
	// Present: the workspace exists.
	Present State = "present"
	// Gone: the workspace no longer exists.
	Gone State = "gone"
	// Unknown: the cache has no valid record (an older cordon made it,
	// or its record was changed).
	Unknown State = "unknown"
)

// Cache is one workspace's sandbox cache.
type Cache struct {
	// Name is the directory's name in the root.
	Name string `json:"name"`
	// Dir is the cache directory.
	Dir string `json:"dir"`
	// Workspace is the recorded workspace, or "" when State is Unknown.
	Workspace string `json:"workspace,omitempty"`
	// State says whether the workspace still exists.
	State State `json:"state"`
	// Size is the disk space it uses in bytes, as du counts it.
	Size int64 `json:"size"`
}

// Record writes the workspace's path into its sandbox cache dir, unless a
// record is already there.
func Record(dir, workspace string) error {
	p := filepath.Join(dir, RecordName)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("recording the workspace of %s: %w", dir, err)
	}
	_, err = f.WriteString(workspace + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("recording the workspace of %s: %w", dir, err)
	}
	return nil
}

// ValidName reports whether name can be a sandbox cache's name.
func ValidName(name string) bool {
	if len(name) != len(policy.SandboxCacheName("")) {
		return false
	}
	for _, r := range name {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return false
		}
	}
	return true
}

// List returns the sandbox caches in root, sorted by workspace, with their
// sizes and states. A missing root has none.
func List(root string) ([]Cache, error) {
	r, err := os.OpenRoot(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the sandbox caches: %w", err)
	}
	defer r.Close()
	ents, err := fs.ReadDir(r.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("listing the sandbox caches in %s: %w", root, err)
	}
	var out []Cache
	for _, e := range ents {
		if !e.IsDir() || !ValidName(e.Name()) {
			continue
		}
		c := Cache{Name: e.Name(), Dir: filepath.Join(root, e.Name()), State: Unknown}
		if ws, ok := readRecord(r, e.Name()); ok {
			c.Workspace = ws
			c.State = Present
			if _, err := os.Stat(ws); errors.Is(err, fs.ErrNotExist) {
				c.State = Gone
			}
		}
		c.Size = size(r, e.Name())
		if mr, err := os.OpenRoot(ModCacheRoot(root)); err == nil {
			if fi, err := mr.Lstat(e.Name()); err == nil && fi.IsDir() {
				c.Size += size(mr, e.Name())
			}
			mr.Close()
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Workspace != out[j].Workspace {
			return out[i].Workspace < out[j].Workspace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// readRecord returns the workspace recorded in the cache name, if the
// record is a regular file naming an absolute path whose hash is name.
func readRecord(r *os.Root, name string) (string, bool) {
	p := name + "/" + RecordName
	fi, err := r.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 8<<10 {
		return "", false
	}
	b, err := r.ReadFile(p)
	if err != nil {
		return "", false
	}
	ws := strings.TrimSuffix(string(b), "\n")
	if !filepath.IsAbs(ws) || filepath.Clean(ws) != ws || policy.SandboxCacheName(ws) != name {
		return "", false
	}
	return ws, true
}

// size is the disk space used below name (as du counts it: allocated
// blocks of every entry, directories included), following no symbolic
// link; what cannot be read is left out.
func size(r *os.Root, name string) int64 {
	var n int64
	fs.WalkDir(r.FS(), name, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if b, ok := allocated(fi); ok {
				n += b
			} else if d.Type().IsRegular() {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// ModCacheRoot is, for the sandbox caches' root, the directory of the Go
// module caches the bwrap backend shows at the host's module cache path
// (policy.GoModCacheDir): a sibling of root (~/.cache/cordon/gomod), so
// that the directory bwrap
// binds is out of every sandbox's reach (a sandbox could replace a
// directory inside its own cache with a link to anywhere). Each is named
// as its workspace's cache, and counted and removed with it.
func ModCacheRoot(root string) string {
	return filepath.Dir(policy.GoModCacheDir(filepath.Join(root, "x")))
}

// Remove removes the sandbox cache name from root, and its Go module
// cache (ModCacheRoot): only a real directory directly in root with a
// cache's name, and nothing outside it (links in it are removed, never
// followed). Read-only directories in it (the go command makes its module
// cache read-only) are made writable first.
func Remove(root, name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%q is not a sandbox cache's name", name)
	}
	if err := removeIn(ModCacheRoot(root), name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return removeIn(root, name)
}

// removeIn removes the directory name directly in root, as Remove says.
func removeIn(root, name string) error {
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("opening the sandbox caches: %w", err)
	}
	defer r.Close()
	fi, err := r.Lstat(name)
	if err != nil {
		return fmt.Errorf("removing sandbox cache %s: %w", name, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("removing sandbox cache %s: not a directory", filepath.Join(root, name))
	}
	// Directories without write permission cannot be emptied by a user
	// who is not root; give them back to their owner first.
	fs.WalkDir(r.FS(), name, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Mode().Perm()&0o700 != 0o700 {
			r.Chmod(p, fi.Mode().Perm()|0o700)
		}
		return nil
	})
	if err := r.RemoveAll(name); err != nil {
		return fmt.Errorf("removing sandbox cache %s: %w", filepath.Join(root, name), err)
	}
	return nil
}
