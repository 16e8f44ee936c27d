package toolenv

import (
	"os"
	"path/filepath"
	"strings"
)

// The workspace is writable from inside the sandbox (an agent's earlier
// run, its file tools, an unpacked archive), so FindRegistries trusts
// nothing in it: it never runs a tool found there on the host, nor hands
// a host tool a PATH that reaches into it, and a tool setting read from a
// file inside it (a venv's pip.conf, a CARGO_HOME, the go env file of a
// home that is the workspace) is listed in Unlisted, never allowed.

// inWorkspace reports whether path lies inside the workspace, as written
// or once its symbolic links are resolved.
func (c *collector) inWorkspace(path string) bool {
	ws := c.h.Workspace
	if ws == "" || path == "" {
		return false
	}
	if beneath(filepath.Clean(ws), filepath.Clean(path)) {
		return true
	}
	rws, err := filepath.EvalSymlinks(ws)
	if err != nil {
		rws = filepath.Clean(ws)
	}
	rp, err := filepath.EvalSymlinks(path)
	if err != nil {
		// A path that does not exist (yet): resolve its directory, where
		// the sandbox could create it.
		dir, derr := filepath.EvalSymlinks(filepath.Dir(path))
		if derr != nil {
			return false
		}
		rp = filepath.Join(dir, filepath.Base(path))
	}
	return beneath(rws, rp) || beneath(filepath.Clean(ws), rp)
}

// beneath reports whether path is dir or inside it (both clean).
func beneath(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// safePATH keeps, of a PATH, the absolute directories outside the
// workspace: where host tools are looked up, and the PATH they run with
// (a script's "#!/usr/bin/env node" looks node up there).
func (c *collector) safePATH(path string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) && !c.inWorkspace(dir) {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// toolEnv is the environment a host tool runs with: the variables of
// names that are set (variable, or the host's with host), PATH kept to
// safePATH's directories.
func (c *collector) toolEnv(names []string, host bool) []string {
	var env []string
	for _, k := range names {
		var v string
		var ok bool
		if host {
			v, ok = c.h.Getenv(k)
		} else {
			v, _, ok = c.variable(k)
		}
		if !ok {
			continue
		}
		if k == "PATH" {
			v = c.safePATH(v)
		}
		env = append(env, k+"="+v)
	}
	return env
}

// trusting runs read, which adds the registries of the file path; when
// path lies inside the workspace, what read would allow is listed in
// Unlisted instead.
func (c *collector) trusting(path string, read func()) {
	if !c.inWorkspace(path) {
		read()
		return
	}
	prev := c.untrusted
	c.untrusted = c.short(path)
	defer func() { c.untrusted = prev }()
	read()
}

// untrustedWhy is why an entry named in a workspace file is not allowed.
func (c *collector) untrustedWhy(entry string) string {
	return "it is named in " + c.untrusted + ", a file inside the workspace, which the sandbox can write: a repository's own files may only tighten the policy; allow it with --allow-net " + entry
}
