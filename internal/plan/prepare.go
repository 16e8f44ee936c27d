package plan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/cordon-sandbox/cordon/policy"
)

// PrepKind is one kind of thing the launcher does on the host before the
// run (Plan.Prepare): Build only says what, the launcher does it.
type PrepKind string

// Kinds of preparation, each with what it reads of Preparation.
const (
	// PrepDir creates the directory Path and its parents with Mode; an
	// error fails the run (cordon's state directory, the sandbox cache).
	PrepDir PrepKind = "dir"
	// PrepStateFile makes Path, in cordon's state directory, exactly a
	// directory (Dir) or a regular file of mode Mode holding Content: the
	// masks bound over denied paths and the empty files and directories
	// bound over missing protected ones. An error fails the run.
	PrepStateFile PrepKind = "state-file"
	// PrepRecordCache writes Workspace into the sandbox cache Path, for
	// cordon cache (sandboxcache.Record). Errors are ignored: the cache is
	// then listed as of an unknown workspace.
	PrepRecordCache PrepKind = "record-cache"
	// PrepGoModDir creates the sandbox's Go module cache Path (Mode); an
	// error is ignored (the go command creates it itself).
	PrepGoModDir PrepKind = "go-mod-dir"
	// PrepSeedSumdb copies each checksum database tree head
	// From/NAME/latest (the host's GOPATH/pkg/sumdb) to
	// gopath/pkg/sumdb/NAME/latest in the sandbox cache Path (the
	// sandbox's GOPATH), where the sandbox has none yet, so that the
	// sandbox verifies modules against a tree at least as new as the one
	// the host has seen and needs no network to learn one. Sandboxes
	// write Path: the launcher reaches it only through an os.Root. Errors
	// are ignored.
	PrepSeedSumdb PrepKind = "seed-sumdb"
	// PrepSeedGoModules links into the module cache Path (bwrap's,
	// policy.GoModCacheDir) each module version that the go.sum GoSum (a
	// regular file directly in Workspace) names and the host's module
	// cache From holds unpacked, pointing at HostModCache (bwrap backend
	// only). Sandboxes write Path and Workspace: the launcher reaches
	// both only through an os.Root. Errors only mean fewer links.
	PrepSeedGoModules PrepKind = "seed-go-modules"
	// PrepUnseedGoModules removes the links PrepSeedGoModules made in the
	// sandbox cache Path (Landlock-only backend, where they would
	// dangle).
	PrepUnseedGoModules PrepKind = "unseed-go-modules"
)

// Preparation is one thing the launcher does on the host before the run,
// in the order of Plan.Prepare. Build itself writes nothing.
type Preparation struct {
	Kind PrepKind `json:"kind"`
	// Path is what is created or changed.
	Path string `json:"path"`
	// Mode is the permission bits of what is created.
	Mode fs.FileMode `json:"mode,omitempty"`
	// Dir: a PrepStateFile is a directory.
	Dir bool `json:"dir,omitempty"`
	// Content is a PrepStateFile's content.
	Content string `json:"content,omitempty"`
	// From is where a seed comes from on the host.
	From string `json:"from,omitempty"`
	// GoSum is the name of the go.sum in Workspace a PrepSeedGoModules
	// reads.
	GoSum string `json:"go_sum,omitempty"`
	// Workspace is the workspace a PrepRecordCache records, or whose
	// go.sum a PrepSeedGoModules reads.
	Workspace string `json:"workspace,omitempty"`
}

// GoModDir is the sandbox's Go module cache in the sandbox cache.
const GoModDir = "go-mod"

// stateFiles are the masks and empty files bwrap binds from the state
// directory dir, made by the launcher before the run.
func stateFiles(dir string) []Preparation {
	out := []Preparation{{Kind: PrepDir, Path: dir, Mode: 0o700}}
	for _, m := range []struct {
		name    string
		dir     bool
		mode    fs.FileMode
		content string
	}{{maskFile, false, 0, ""}, {maskDir, true, 0, ""}, {emptyFile, false, 0o444, ""}, {emptyDir, true, 0o555, ""}, {commondirFile, false, 0o444, ".\n"}, {denyResolvConf, false, 0o444, denyResolvConfText}} {
		out = append(out, Preparation{Kind: PrepStateFile, Path: filepath.Join(dir, m.name), Dir: m.dir, Mode: m.mode, Content: m.content})
	}
	return out
}

// usableSandboxCache keeps the sandbox cache in the plan when the launcher
// can create it (private to the user) before the run: bwrap binds only
// what exists. When it cannot (a read-only home), the run goes on without
// it: it returns a copy of p without the cache in Write, and a note
// saying so.
func usableSandboxCache(p *policy.Policy) (*policy.Policy, string) {
	c := sandboxCache(p)
	if c == "" {
		return p, ""
	}
	if err := dirProblem(c); err != nil {
		q := *p
		q.Write = slices.DeleteFunc(slices.Clone(p.Write), func(w string) bool { return w == c })
		return &q, fmt.Sprintf("no sandbox cache (creating %s: %v): Go's, npm's and pip's caches stay read-only inside", c, err)
	}
	return p, ""
}

// cachePreps are the preparations of the sandbox cache c: the directory,
// the record of its workspace, the Go module cache and the checksum
// database's tree heads (seeded from the host's GOPATH hostGoPath, when
// known).
func cachePreps(c, workspace, hostGoPath string) []Preparation {
	out := []Preparation{
		{Kind: PrepDir, Path: c, Mode: 0o700},
		{Kind: PrepRecordCache, Path: c, Workspace: workspace},
		{Kind: PrepGoModDir, Path: filepath.Join(c, GoModDir), Mode: 0o700},
		// bwrap's module cache, beside the sandbox cache (goModRemap).
		{Kind: PrepDir, Path: policy.GoModCacheDir(c), Mode: 0o700},
	}
	if hostGoPath != "" {
		out = append(out, Preparation{Kind: PrepSeedSumdb, Path: c, From: filepath.Join(hostGoPath, "pkg", "sumdb")})
	}
	return out
}

// dirProblem says why the directory dir could not be created (the errno,
// as os.MkdirAll would fail), or nil when it exists or can be: it looks at
// dir and its nearest existing ancestor, and writes nothing.
func dirProblem(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err == nil {
			switch {
			case !fi.IsDir():
				return syscall.ENOTDIR
			case d == dir:
				return nil
			}
			return writable(d)
		}
		if !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return pe.Err
			}
			return err
		}
	}
}

// resolvePlanned is filepath.EvalSymlinks for a directory that may not
// exist yet (the launcher creates it): its nearest existing ancestor is
// resolved, and the rest joined.
func resolvePlanned(path string) (string, error) {
	var rest []string
	d := path
	for {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("resolving %s: no existing ancestor", path)
		}
		rest = append(rest, filepath.Base(d))
		d = filepath.Dir(d)
	}
	src, err := filepath.EvalSymlinks(d)
	if err != nil {
		return "", err
	}
	for i := len(rest) - 1; i >= 0; i-- {
		src = filepath.Join(src, rest[i])
	}
	return src, nil
}
