// Package agentsetup writes an agent's own configuration so that the agent
// runs its tools through cordon (cordon setup AGENT): the hooks cordon hook
// serves, and cordon's MCP server. It merges into the user's files and
// never loses what is there: a JSON file is parsed and written back with
// every other member in its order; Codex's config.toml gets one block
// between marker comments appended, the rest of the file untouched. A
// second run changes nothing, --undo removes exactly the entries whose
// command is a cordon binary's (or the marked block), with the containers
// (hooks, mcpServers) and the file they leave empty, and a file it cannot
// parse is refused, never overwritten. Files are replaced atomically
// (a temporary file renamed over them, a symbolic link's target written).
//
// It owns the agents' configuration file layouts (the edits of each agent
// in agents.go); the hooks' protocols are package agenthook's.
package agentsetup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/suggest"
)

// Options is one cordon setup run.
type Options struct {
	// Agent is the agent's name (Names).
	Agent string
	// Project writes the project's configuration (in Workspace) instead
	// of the user's (in Home).
	Project bool
	// DryRun prints each file setup would write, whole, and writes none.
	DryRun bool
	// Undo removes what setup added.
	Undo bool
	// Cordon is the absolute path of the cordon binary the hooks and the
	// MCP server run.
	Cordon string
	// Home is the user's home directory; Workspace the project's.
	Home, Workspace string
	// Getenv looks up a variable (CODEX_HOME); nil means none is set.
	Getenv func(string) string
	// Out receives what setup did (and, with DryRun, the files).
	Out io.Writer
}

// edit is one file setup changes.
type edit struct {
	// path is the file's absolute path.
	path string
	// what says what setup puts there, for the messages.
	what string
	// apply and undo change the file's content; they report whether
	// anything changed.
	apply, undo func(old []byte) (new []byte, changed bool, err error)
	// warn, when set, returns warnings about the file as setup leaves it.
	warn func(content []byte) []string
}

// Run performs o: every file is read and its new content computed first;
// nothing is written unless all of them parse.
func Run(o Options) error {
	ag, ok := agents[o.Agent]
	if !ok {
		return errors.New(suggest.Unknown("agent", o.Agent, Names()))
	}
	if !filepath.IsAbs(o.Cordon) {
		return fmt.Errorf("cordon's own path %q is not absolute", o.Cordon)
	}
	base := o.Home
	if o.Project {
		base = o.Workspace
	}
	if base == "" || !filepath.IsAbs(base) {
		return fmt.Errorf("no absolute directory to set up in (%q)", base)
	}
	if o.Project && filepath.Clean(o.Workspace) == filepath.Clean(o.Home) {
		return fmt.Errorf("--project in the home directory would write the user's own files: run it in the project's directory, or drop --project")
	}
	edits := ag(o)
	type result struct {
		e        edit
		target   string
		old, new []byte
		exists   bool
		changed  bool
	}
	var results []result
	for _, e := range edits {
		target, err := realTarget(e.path)
		if err != nil {
			return err
		}
		old, err := os.ReadFile(target)
		exists := err == nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading %s: %w; nothing was written", tilde(e.path, o.Home), err)
		}
		f := e.apply
		if o.Undo {
			f = e.undo
		}
		var nw []byte
		changed := false
		if exists || !o.Undo {
			nw, changed, err = f(old)
			if err != nil {
				return fmt.Errorf("%s: %w; fix or move the file, then run cordon setup again (nothing was written)", tilde(e.path, o.Home), err)
			}
		}
		results = append(results, result{e, target, old, nw, exists, changed})
	}
	for _, r := range results {
		name := tilde(r.e.path, o.Home)
		if r.e.warn != nil && !o.Undo {
			content := r.new
			if !r.changed {
				content = r.old
			}
			for _, w := range r.e.warn(content) {
				fmt.Fprintf(o.Out, "cordon: warning: %s %s\n", name, w)
			}
		}
		switch {
		case !r.changed && o.Undo:
			fmt.Fprintf(o.Out, "cordon: setup %s: %s holds nothing of cordon's; nothing changed\n", o.Agent, name)
		case !r.changed:
			fmt.Fprintf(o.Out, "cordon: setup %s: %s already has %s; nothing changed\n", o.Agent, name, r.e.what)
		case o.DryRun && len(r.new) == 0:
			fmt.Fprintf(o.Out, "cordon: setup %s: would remove %s (only cordon's entries were left in it)\n", o.Agent, name)
		case o.DryRun:
			fmt.Fprintf(o.Out, "cordon: setup %s: would write %s:\n%s", o.Agent, name, r.new)
		default:
			if err := writeFile(r.target, r.new, r.exists); err != nil {
				return fmt.Errorf("writing %s: %w", name, err)
			}
			verb := "added " + r.e.what + " to"
			if o.Undo {
				verb = "removed " + r.e.what + " from"
			}
			fmt.Fprintf(o.Out, "cordon: setup %s: %s %s\n", o.Agent, verb, name)
		}
	}
	return nil
}

// realTarget is path with a symbolic link at its end followed (a dotfile
// manager's link stays a link; its target is written).
func realTarget(path string) (string, error) {
	for range 40 {
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return path, nil
		}
		t, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("reading the link %s: %w", path, err)
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(path), t)
		}
		path = t
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// writeFile replaces path with data atomically (a temporary file in the
// same directory, synced, renamed over it), keeping an existing file's
// mode; new files and directories are private to the user. Empty data
// removes the file.
func writeFile(path string, data []byte, exists bool) error {
	if len(data) == 0 {
		if !exists {
			return nil
		}
		return os.Remove(path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	mode := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".cordon-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// tilde shows path with the home directory as ~.
func tilde(path, home string) string {
	if home != "" {
		if rest, ok := strings.CutPrefix(path, home+"/"); ok {
			return "~/" + rest
		}
	}
	return path
}

// jsonEdit is an edit of a JSON file by f, which changes the parsed
// object and reports whether it did. An object left empty by an undo
// removes the file (setup made it, or only cordon's entries were in it).
func jsonEdit(path, what string, apply, undo func(*object) (bool, error)) edit {
	run := func(f func(*object) (bool, error), removeEmpty bool) func([]byte) ([]byte, bool, error) {
		return func(old []byte) ([]byte, bool, error) {
			o, err := parseJSON(old)
			if err != nil {
				return nil, false, fmt.Errorf("not valid JSON (%v)", err)
			}
			changed, err := f(o)
			if err != nil || !changed {
				return old, changed, err
			}
			if removeEmpty && len(o.keys) == 0 {
				return nil, true, nil
			}
			return o.encode(), true, nil
		}
	}
	return edit{path: path, what: what, apply: run(apply, false), undo: run(undo, true)}
}

// equalJSON compares two values setup stores.
func equalJSON(a, b any) bool {
	var x, y bytes.Buffer
	writeValue(&x, a, "")
	writeValue(&y, b, "")
	return x.String() == y.String()
}
