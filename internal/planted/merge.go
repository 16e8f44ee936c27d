package planted

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// ConfigChange is one key a run changed in its copy of a repository's
// config, as MergeConfig took it.
type ConfigChange struct {
	// Key is the key as git prints it (section[.sub].name).
	Key string `json:"key"`
	// Values are the key's values in the run's copy, in order; none when
	// the run removed the key.
	Values []string `json:"values,omitempty"`
	// Applied reports that the host's config now has Values for Key.
	Applied bool `json:"applied"`
	// Rule, for a change not applied, is why: the dangerousKeys pattern
	// that matched ("planted:core.fsmonitor"), or "not merged back" for a
	// key that is not on the list of safe ones.
	Rule string `json:"rule,omitempty"`
}

// maxMergedKeys bounds the keys one run may change in a config: what git
// commands write is a handful, and the merge's cost grows with each.
const maxMergedKeys = 1000

// keyID is a key without its value: section, subsection and name.
type keyID struct {
	section, sub, name string
	hasSub             bool
}

func idOf(e gitconfig.Entry) keyID { return keyID{e.Section, e.Sub, e.Name, e.HasSub} }

// MergeConfig takes into host (the host's config as it is now) what a run
// changed in its private copy of a repository's config: orig is what the
// copy held when the run started, copy what it holds at the end. A key
// whose entries changed (added, removed or given other values) is applied
// only when each of its values in copy is on the list of safe keys
// (mergedKeys) and none matches dangerousKeys: the host's entries of that
// key are then replaced by copy's, the rest of host kept byte for byte.
// Every other changed key is left as the host has it and reported, with
// its rule. A copy git would refuse applies nothing (err says which line);
// so does a host file git refuses (it cannot be edited safely).
//
// writable, when not nil, says whether a local path (absolute, clean) is
// one the run could write: a remote, push remote or submodule URL naming
// such a repository is refused ("local:..."), as git runs that
// repository's hooks when it pushes there, and the run could have planted
// them past the check after it. base is the directory a relative path is
// taken from (the repository's work tree).
func MergeConfig(orig, copy, host []byte, base string, writable func(string) bool) (out []byte, changes []ConfigChange, err error) {
	ce, err := gitconfig.Parse(copy)
	if err != nil {
		return host, nil, fmt.Errorf("the run's config: %w", err)
	}
	he, err := gitconfig.Parse(host)
	if err != nil {
		return host, nil, fmt.Errorf("the host's config: %w", err)
	}
	oe := gitconfig.ParseAll(orig)
	// What changed, key by key, in the order the copy has them.
	count := map[string]int{}
	for _, e := range oe {
		count[e.Tuple()]++
	}
	for _, e := range ce {
		count[e.Tuple()]--
	}
	var keys []keyID
	touched := map[keyID]bool{}
	mark := func(e gitconfig.Entry) {
		if id := idOf(e); count[e.Tuple()] != 0 && !touched[id] {
			touched[id] = true
			keys = append(keys, id)
		}
	}
	for _, e := range ce {
		mark(e)
	}
	for _, e := range oe {
		mark(e)
	}
	if len(keys) > maxMergedKeys {
		return host, nil, fmt.Errorf("the run changed %d keys, more than the %d cordon merges", len(keys), maxMergedKeys)
	}
	var remove, add []gitconfig.Entry
	for _, id := range keys {
		c := ConfigChange{}
		var vals []gitconfig.Entry
		for _, e := range ce {
			if idOf(e) == id {
				vals = append(vals, e)
				c.Values = append(c.Values, e.ValueOrTrue())
			}
		}
		probe := gitconfig.Entry{Section: id.section, Sub: id.sub, HasSub: id.hasSub, Name: id.name}
		c.Key = probe.Key()
		if len(vals) == 0 && !mergedName(probe) {
			c.Rule = "not merged back" // a removal: the key alone decides
		}
		for _, e := range vals {
			if r := dangerous(e); r != "" {
				c.Rule = "planted:" + r
				break
			}
			if merged(e) == "" || !writableEntry(e) {
				c.Rule = "not merged back"
			}
			if p, ok := localRepo(e, base); ok && c.Rule == "" && writable != nil && writable(p) {
				c.Rule = "local:a repository the run could write"
				break
			}
		}
		if c.Rule == "" {
			c.Applied = true
			for _, e := range he {
				if idOf(e) == id {
					remove = append(remove, e)
				}
			}
			add = append(add, vals...)
		}
		changes = append(changes, c)
	}
	// One header per section: the added keys grouped by section, in the
	// order each section first comes.
	first := map[keyID]int{}
	for i, e := range add {
		s := keyID{section: e.Section, sub: e.Sub, hasSub: e.HasSub}
		if _, ok := first[s]; !ok {
			first[s] = i
		}
	}
	slices.SortStableFunc(add, func(a, b gitconfig.Entry) int {
		return first[keyID{section: a.Section, sub: a.Sub, hasSub: a.HasSub}] - first[keyID{section: b.Section, sub: b.Sub, hasSub: b.HasSub}]
	})
	if len(remove) == 0 && len(add) == 0 {
		return host, changes, nil
	}
	out = gitconfig.Edit(host, remove, add)
	// Read back as git will read it: every key the host's config did not
	// have must be one merged here, allowed and not planted; else nothing
	// is written.
	had := map[string]bool{}
	for _, e := range gitconfig.ParseAll(host) {
		had[e.Tuple()] = true
	}
	for _, e := range gitconfig.ParseAll(out) {
		if !had[e.Tuple()] && (dangerous(e) != "" || merged(e) == "") {
			return host, nil, fmt.Errorf("the merged config would read as %s: nothing written", e.Key())
		}
	}
	return out, changes, nil
}

// localRepo is the local repository a URL key names (remote.*.url and
// pushurl, submodule.*.url, branch.*.remote and pushRemote): a path, or
// a file:// URL, made absolute from base; false for a network URL, an
// scp-like host:path and a remote's name.
func localRepo(e gitconfig.Entry, base string) (string, bool) {
	switch key := e.Section + "." + e.Name; key {
	case "remote.url", "remote.pushurl", "submodule.url", "branch.remote", "branch.pushremote":
	default:
		return "", false
	}
	v := strings.TrimSpace(e.Value)
	if rest, ok := strings.CutPrefix(v, "file://"); ok {
		v = rest
	} else if strings.Contains(v, "://") {
		return "", false
	}
	slash := strings.IndexByte(v, '/')
	if colon := strings.IndexByte(v, ':'); colon >= 0 && (slash < 0 || colon < slash) {
		return "", false // host:path, as git reads it
	}
	if slash < 0 && e.Section == "branch" {
		return "", false // a remote's name
	}
	if strings.HasPrefix(v, "~") {
		return "/", true // a home directory: taken as writable, refused
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(base, v)
	}
	return filepath.Clean(v), true
}

// writableEntry reports whether e can be written as git will read it
// back: no control character in its subsection (git refuses a newline
// there and ends the key at a NUL) or its value's NUL.
func writableEntry(e gitconfig.Entry) bool {
	for _, s := range []string{e.Sub, e.Value} {
		for i := 0; i < len(s); i++ {
			if c := s[i]; (c < 0x20 || c == 0x7f) && (s == e.Sub || c == 0) {
				return false
			}
		}
	}
	return true
}
