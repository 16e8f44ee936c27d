package ask

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cordon-sandbox/cordon/internal/config"
	"github.com/cordon-sandbox/cordon/internal/filelock"
	"github.com/cordon-sandbox/cordon/internal/subpath"
	"go.yaml.in/yaml/v3"
)

// SaveWorkspace adds q's target to the user config file path, under the
// top-level workspaces entry of workspace (an absolute path): a network
// target to its network.allow, a path to its filesystem.read or
// filesystem.write. The file keeps everything else it holds, comments
// included; it is written whole to a new file beside it and renamed over
// it (its mode kept), so a reader never sees half of it. The read, the
// change and the rename hold an exclusive lock of the file's directory
// (filelock.LockDir, waited for at most saveWait), so that two runs
// saving at once both land, one after the other. The result must parse
// as a config file, or nothing is written. It refuses a file inside any
// of writable (the run's writable roots): the sandbox could have
// written it, and a file there may only tighten the policy.
func SaveWorkspace(path, workspace string, q Question, writable []string) error {
	if !filepath.IsAbs(path) || !filepath.IsAbs(workspace) {
		return fmt.Errorf("the user config %q or the workspace %q is not an absolute path", path, workspace)
	}
	real := realPath(path)
	for _, w := range writable {
		if subpath.Within(real, realPath(w)) || subpath.Within(path, w) {
			return fmt.Errorf("the user config %s lies inside %s, which the sandbox may write; move it out (set XDG_CONFIG_HOME)", path, w)
		}
	}
	var key []string
	switch q.Kind {
	case Net:
		key = []string{"network", "allow"}
	case FileRead:
		key = []string{"filesystem", "read"}
	case FileWrite:
		key = []string{"filesystem", "write"}
	default:
		return fmt.Errorf("nothing to save for a question about %q", q.Kind)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	unlock, err := filelock.LockDir(dir, saveWait)
	if err != nil {
		return fmt.Errorf("locking the user config's directory: %w", err)
	}
	defer unlock()
	data, err := config.ReadFile(path, config.ReadOptions{})
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = nil
	case err != nil:
		return err
	default:
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
	}
	if _, err := config.Parse(path, data); err != nil {
		return fmt.Errorf("the user config has an error, fix it first: %w", err)
	}
	var doc yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if doc.Kind == 0 {
		doc = yaml.Node{Kind: yaml.DocumentNode}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		doc.Content = []*yaml.Node{{Kind: yaml.MappingNode}}
	}
	n := child(doc.Content[0], "workspaces")
	n = child(n, workspace)
	for _, k := range key[:len(key)-1] {
		n = child(n, k)
	}
	list := child(n, key[len(key)-1])
	if list.Kind != yaml.SequenceNode {
		*list = yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	}
	target := q.Target()
	for _, e := range list.Content {
		if e.Value == target {
			return nil // saved already
		}
	}
	list.Content = append(list.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: target})
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("writing the user config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("writing the user config: %w", err)
	}
	if _, err := config.Parse(path, out.Bytes()); err != nil {
		return fmt.Errorf("the user config would not parse after the change, left as it was: %w", err)
	}
	return writeAtomic(path, out.Bytes(), mode)
}

// saveWait bounds how long SaveWorkspace waits for another process
// saving into the same user config.
const saveWait = 10 * time.Second

// child returns the value of key in the mapping m, added (an empty
// mapping) when m has none; an empty value becomes an empty mapping.
func child(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		*m = yaml.Node{Kind: yaml.MappingNode}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v := m.Content[i+1]
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
				*v = yaml.Node{Kind: yaml.MappingNode}
			}
			return v
		}
	}
	v := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
	return v
}

// writeAtomic writes data to path through a new file in its directory,
// synced and renamed over path.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".config.yaml.*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a rename, nothing is there
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// realPath is p with the symbolic links of its longest existing prefix
// resolved.
func realPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
