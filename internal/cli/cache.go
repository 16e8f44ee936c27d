package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/internal/sandboxcache"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/spf13/cobra"
)

func newCache() *cobra.Command {
	var clean, jsonOut bool
	var workspace string
	c := &cobra.Command{
		Use:   "cache [--clean] [--workspace DIR] [--json]",
		Short: "the per-workspace sandbox caches: list, size, remove",
		Long: `List the sandbox caches (${SANDBOX_CACHE}: the Go, npm and pip caches that only
the sandboxes of one workspace use, under $XDG_CACHE_HOME/cordon/sandbox) with
their size and workspace.

--clean removes the caches whose workspace is gone, and those with no valid
record of their workspace (made by an older cordon). With --workspace DIR,
only DIR's cache is listed, and --clean removes it even though DIR exists
(its next run starts with an empty cache; do not clean it while a command
runs there).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := policy.HostFromOS()
			if err != nil {
				return err
			}
			return runCache(cmd.OutOrStdout(), h, workspace, clean, jsonOut)
		},
	}
	c.Flags().BoolVar(&clean, "clean", false, "remove the caches whose workspace is gone or unknown (with --workspace: that workspace's cache)")
	c.Flags().StringVar(&workspace, "workspace", "", "only the cache of this workspace `DIR` (which may no longer exist)")
	c.Flags().BoolVar(&jsonOut, "json", false, "print the caches as JSON")
	return c
}

// cacheLine is one cache in cordon cache's output.
type cacheLine struct {
	sandboxcache.Cache
	// Removed is set when --clean removed the cache.
	Removed bool `json:"removed,omitempty"`
}

// cacheJSON is `cordon cache --json`: the caches' directory and each
// cache ([] when there are none).
type cacheJSON struct {
	Root   string      `json:"root"`
	Caches []cacheLine `json:"caches"`
}

func runCache(w io.Writer, h policy.Host, workspace string, clean, jsonOut bool) error {
	root := policy.SandboxCacheRoot(h)
	caches, err := sandboxcache.List(root)
	if err != nil {
		return err
	}
	only := workspace != ""
	if only {
		ws := workspaceKey(workspace, h.Cwd)
		name := policy.SandboxCacheName(ws)
		var mine []sandboxcache.Cache
		for _, c := range caches {
			if c.Name == name {
				mine = append(mine, c)
			}
		}
		if len(mine) == 0 {
			return fmt.Errorf("--workspace %s: no sandbox cache for %s in %s; cordon cache lists them all", workspace, ws, root)
		}
		caches = mine
	}
	lines := make([]cacheLine, len(caches))
	var freed int64
	removed := 0
	for i, c := range caches {
		lines[i].Cache = c
		if !clean || (!only && c.State == sandboxcache.Present) {
			continue
		}
		if err := sandboxcache.Remove(root, c.Name); err != nil {
			return err
		}
		lines[i].Removed = true
		freed += c.Size
		removed++
	}
	if jsonOut {
		return writeJSON(w, cacheJSON{Root: root, Caches: lines})
	}
	if len(lines) == 0 {
		_, err := fmt.Fprintf(w, "no sandbox caches in %s\n", root)
		return err
	}
	var total int64
	stale := 0
	for _, l := range lines {
		total += l.Size
		if l.State != sandboxcache.Present {
			stale++
		}
		where := l.Workspace
		if l.State == sandboxcache.Unknown {
			where = l.Dir + " (workspace unknown)"
		}
		verb := ""
		if l.Removed {
			verb = "removed "
		}
		if _, err := fmt.Fprintf(w, "%s%9s  %-7s  %s\n", verb, humanSize(l.Size), l.State, where); err != nil {
			return err
		}
	}
	var err2 error
	switch {
	case clean:
		_, err2 = fmt.Fprintf(w, "removed %d of %s in %s, %s freed\n", removed, nCaches(len(lines)), root, humanSize(freed))
	case stale > 0 && !only:
		_, err2 = fmt.Fprintf(w, "%s, %s, in %s; cordon cache --clean removes the %d whose workspace is gone or unknown\n", nCaches(len(lines)), humanSize(total), root, stale)
	default:
		_, err2 = fmt.Fprintf(w, "%s, %s, in %s\n", nCaches(len(lines)), humanSize(total), root)
	}
	return err2
}

// workspaceKey is the workspace path a policy would hash for dir: absolute,
// cleaned, symlinks resolved when it still exists.
func workspaceKey(dir, cwd string) string {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cwd, dir)
	}
	dir = filepath.Clean(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	} else if !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "cordon: warning: resolving %s: %v\n", dir, err)
	}
	return dir
}

func nCaches(n int) string {
	if n == 1 {
		return "1 cache"
	}
	return fmt.Sprintf("%d caches", n)
}

// humanSize prints a byte count in binary units.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 3 {
		v /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGT"[i])
}
