package planted

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/gitconfig"
)

// checkDir compares one git directory with the snapshot and disarms what
// the run planted in it.
func (c *checker) checkDir(abs string, ref gitDirRef) {
	// Its config, hooks and commondir were read-only during the run: a
	// change there came from the host. The rebase's to-do list is not.
	replaced := c.replaced(abs, ref)
	kept := c.kept[abs] && c.b.known[abs] && !replaced && !c.keptEntriesChanged(abs, ref)
	if c.b.known[abs] && c.b.dirs[abs] == nil {
		c.note(fmt.Sprintf("%s existed before the run but was not recorded (more than %d git directories)", abs, MaxSnapshotDirs))
		return
	}
	g, err := ref.root.OpenRoot(ref.rel)
	if err != nil {
		return
	}
	defer g.Close()
	d := &dirCheck{c: c, g: g, root: ref.root, abs: abs, rel: ref.rel, prev: c.b.dirs[abs]}
	d.mountLost = c.kept[abs] && c.b.known[abs] && !replaced && !kept
	switch {
	case d.prev == nil:
		d.fresh = c.becameGitDir(ref)
	case d.prev.keptOnly && replaced:
		// Recorded as kept read-only (SnapshotKeeping), but another
		// directory is at its path now: nothing of it was recorded, and
		// everything in it counts as the run's.
		d.prev, d.fresh = nil, true
	}
	d.todos()
	if kept {
		return
	}
	d.hooks("hooks")
	for _, name := range configFiles {
		d.config(name)
	}
	d.commondir()
}

// dirCheck is the check of one git directory.
type dirCheck struct {
	c    *checker
	g    *os.Root // the git directory
	root *os.Root // the walked root it lies in
	abs  string
	rel  string    // relative to the walked root, for messages
	prev *dirState // nil: the directory is new (or was not known)
	// fresh: an unknown directory that became a git directory during the
	// run, so everything in it counts as the run's, however old.
	fresh bool
	// mountLost: the run's mounts kept the directory read-only, but a
	// kept file was replaced or removed during the run (keptEntriesChanged),
	// which takes the mount on it away: what changed there may be the
	// run's or the user's, and is checked as the run's.
	mountLost bool
}

// planted reports whether a file not in the snapshot counts as the run's:
// always in a recorded directory or one that became a git directory
// during the run; by its change time in another unknown one.
func (d *dirCheck) planted(fi fs.FileInfo) bool {
	return d.prev != nil || d.fresh || d.c.recent(fi)
}

// gitMarkers are the entries that make a directory a git directory for
// git (HEAD, an object store and refs, or a commondir), and the link that
// makes one a repository's.
var gitMarkers = []string{"HEAD", "objects", "refs", "commondir"}

// becameGitDir reports whether the unknown git directory ref became one
// during the run: the directory or one of its markers changed since the
// snapshot. Pieces written by an earlier run and put in place by this one
// (a HEAD.lock renamed to HEAD) change the marker; a repository that was
// complete before would have been in the snapshot.
func (c *checker) becameGitDir(ref gitDirRef) bool {
	for _, m := range append([]string{"."}, gitMarkers...) {
		if fi, err := ref.root.Lstat(filepath.Join(ref.rel, m)); err == nil && c.recent(fi) {
			return true
		}
	}
	return false
}

func (d *dirCheck) add(f Finding) {
	if d.mountLost {
		f.How += "; the file was replaced during the run, which takes away the sandbox's read-only mount on it, so the run could have written this: if it is your own change, make it again outside the sandbox"
	}
	d.c.findings = append(d.c.findings, f)
}

func (d *dirCheck) finding(name, kind, key, value, rule string) Finding {
	if len(value) > maxValue {
		value = value[:maxValue] + "..."
	}
	return Finding{Path: filepath.Join(d.abs, name), Rel: filepath.Join(d.rel, name), Kind: kind, Key: key, Value: value, Rule: rule}
}

// hooks checks the hooks directory name (hooks/ of a git directory, or
// the one core.hooksPath names): executable files and symbolic links that
// are new or changed, and the directory itself if it became a symbolic
// link.
func (d *dirCheck) hooks(name string) {
	fi, err := d.g.Lstat(name)
	if err != nil {
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := d.g.Readlink(name)
		if d.prev != nil && d.prev.hooksLink != nil && d.prev.hooksLink.same(fi) || !d.planted(fi) {
			return
		}
		f := d.finding(name, KindHook, filepath.Base(name), target, "planted:hook")
		d.disarmRename(&f, name, "symbolic link renamed to "+filepath.Base(name)+DisarmedSuffix)
		d.add(f)
		return
	}
	if !fi.IsDir() {
		return
	}
	if d.prev != nil && d.prev.keptOnly && d.prev.hooks == nil {
		// A kept directory's hooks were not listed (recordKept): its
		// hooks directory was replaced during the run, and what changed
		// since the snapshot is the run's.
		byTime := *d
		byTime.prev = nil
		byTime.hooks(name)
		return
	}
	if d.prev != nil && d.prev.hooks == nil {
		d.c.note(fmt.Sprintf("the hooks in %s were not recorded before the run (more than %d entries)", filepath.Join(d.abs, name), maxHooks))
		return
	}
	hf, err := d.g.OpenFile(name, os.O_RDONLY|oNoFollow|oDirectory, 0)
	if err != nil {
		return
	}
	names, err := hf.Readdirnames(maxHooks + 1)
	hf.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return
	}
	if len(names) > maxHooks {
		d.c.note(fmt.Sprintf("%s has more than %d entries; only some were checked", filepath.Join(d.abs, name), maxHooks))
		names = names[:maxHooks]
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.HasSuffix(n, ".sample") || strings.HasSuffix(n, DisarmedSuffix) {
			continue
		}
		rel := filepath.Join(name, n)
		hi, err := d.g.Lstat(rel)
		if err != nil {
			continue
		}
		link := hi.Mode()&fs.ModeSymlink != 0
		if !link && !(hi.Mode().IsRegular() && hi.Mode()&0o111 != 0) {
			continue
		}
		if d.prev != nil {
			if old, ok := d.prev.hooks[n]; ok && old.same(hi) {
				continue
			}
		}
		if !d.planted(hi) {
			continue
		}
		var target string
		if link {
			target, _ = d.g.Readlink(rel)
		}
		f := d.finding(rel, KindHook, n, target, "planted:hook")
		if link {
			d.disarmRename(&f, rel, "symbolic link renamed to "+n+DisarmedSuffix)
		} else {
			d.disarmHook(&f, rel, hi)
		}
		d.add(f)
	}
}

// disarmRename renames rel to rel+DisarmedSuffix unless KeepArmed.
func (d *dirCheck) disarmRename(f *Finding, rel, how string) {
	if d.c.opts.KeepArmed {
		f.How = d.c.keptHow()
		return
	}
	if _, err := renameAside(d.g, rel); err != nil {
		f.How = "could not disarm: " + err.Error()
		if errors.Is(err, errRemoved) {
			f.Disarmed, f.How = true, err.Error()
		}
		return
	}
	f.Disarmed, f.How = true, how
}

// errRemoved is wrapped by renameAside's error when it removed the file it
// could not rename: the file is disarmed all the same.
var errRemoved = errors.New("removed instead")

// renameAside renames rel to rel+DisarmedSuffix (or, if that exists,
// rel+DisarmedSuffix+".N", then a random name: names a run made in
// advance cannot block it) and returns the new name. A parent directory
// the run made unwritable gets its owner's write and search permission
// back for the rename, then its mode again; a file that still cannot be
// renamed is removed: a planted file is never left where a tool reads it.
func renameAside(r *os.Root, rel string) (string, error) {
	to := rel + DisarmedSuffix
	for i := 1; ; i++ {
		if _, err := r.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i > 3 {
			var rnd [6]byte
			_, _ = rand.Read(rnd[:])
			to = rel + DisarmedSuffix + "." + hex.EncodeToString(rnd[:])
			break
		}
		to = rel + DisarmedSuffix + "." + strconv.Itoa(i)
	}
	err := r.Rename(rel, to)
	if errors.Is(err, fs.ErrPermission) {
		parent := filepath.Dir(rel)
		if fi, serr := r.Lstat(parent); serr == nil && fi.IsDir() {
			mode := fi.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
			if r.Chmod(parent, mode|0o300) == nil {
				err = r.Rename(rel, to)
				_ = r.Chmod(parent, mode)
			}
		}
	}
	if err != nil {
		if rerr := r.Remove(rel); rerr == nil {
			return "", fmt.Errorf("renaming %s: %w: %w", rel, err, errRemoved)
		}
		return "", fmt.Errorf("renaming %s: %w", rel, err)
	}
	return to, nil
}

// disarmHook drops the execute bits of a hook through a descriptor opened
// without following links (and checked to be the file examined), and
// writes a note beside it.
func (d *dirCheck) disarmHook(f *Finding, rel string, seen fs.FileInfo) {
	if d.c.opts.KeepArmed {
		f.How = d.c.keptHow()
		return
	}
	fail := func(err error) { f.How = "could not disarm: " + err.Error() }
	h, err := d.g.OpenFile(rel, os.O_RDONLY|oNoFollow|oNonblock, 0)
	if err != nil {
		fail(err)
		return
	}
	defer h.Close()
	fi, err := h.Stat()
	if err != nil {
		fail(err)
		return
	}
	if !fi.Mode().IsRegular() || statOf(fi).ino != statOf(seen).ino {
		fail(fmt.Errorf("%s was replaced while cordon examined it", rel))
		return
	}
	if err := h.Chmod(fi.Mode().Perm() &^ 0o111); err != nil {
		fail(fmt.Errorf("removing the execute bits of %s: %w", rel, err))
		return
	}
	f.Disarmed, f.How = true, "execute bits removed; see "+filepath.Base(rel)+DisarmedSuffix
	note := fmt.Sprintf(`cordon disarmed the git hook %s on %s.

A command that cordon ran confined created or changed this hook. Left as it
was, git would run it on your machine, outside the sandbox, the next time you
commit, check out, push or merge here. cordon removed its execute bits.

Review the hook. To re-arm it, if you trust it:

    chmod +x %s

Then delete this file.
`, f.Path, d.c.now.UTC().Format(time.RFC3339), strconv.Quote(f.Path))
	w, err := d.g.OpenFile(rel+DisarmedSuffix, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|oNoFollow|oNonblock, 0o644)
	if err == nil {
		if wi, serr := w.Stat(); serr == nil && wi.Mode().IsRegular() {
			_, _ = io.WriteString(w, note)
		}
		w.Close()
	}
}

// config checks one config file for planted keys that run a program.
func (d *dirCheck) config(name string) {
	fi, err := d.g.Lstat(name)
	if err != nil {
		return
	}
	var old *fileState
	if d.prev != nil {
		old = d.prev.configs[name]
	}
	if old != nil && old.same(fi) {
		return // unchanged: the common case, one lstat
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		// A config that is a link reads another file's keys.
		if !d.planted(fi) {
			return
		}
		target, _ := d.g.Readlink(name)
		f := d.finding(name, KindConfig, "(symbolic link)", target, "planted:config-link")
		d.disarmRename(&f, name, "symbolic link renamed to "+name+DisarmedSuffix)
		d.add(f)
		return
	}
	if !fi.Mode().IsRegular() {
		return
	}
	if fi.Size() > MaxConfigSize {
		d.c.note(fmt.Sprintf("%s is larger than %d bytes and was not examined", filepath.Join(d.abs, name), MaxConfigSize))
		return
	}
	data, hi, ok := d.readRegular(name, MaxConfigSize)
	if !ok {
		d.c.note(fmt.Sprintf("%s changed while cordon read it and was not examined", filepath.Join(d.abs, name)))
		return
	}
	var had map[string]bool
	switch {
	case old != nil && old.content == nil:
		d.c.note(fmt.Sprintf("%s could not be compared with its content before the run (too large or unreadable)", filepath.Join(d.abs, name)))
		return
	case old != nil:
		had = map[string]bool{}
		for _, e := range gitconfig.ParseAll(old.content) {
			had[e.Tuple()] = true
		}
	case !d.planted(hi):
		return // in an unknown directory, and older than the run
	}
	var bad []gitconfig.Entry
	var rules []string
	for _, e := range gitconfig.ParseAll(data) {
		if r := dangerous(e); r != "" && !had[e.Tuple()] {
			bad = append(bad, e)
			rules = append(rules, r)
		}
	}
	if len(bad) == 0 {
		return
	}
	found := make([]Finding, len(bad))
	for i, e := range bad {
		found[i] = d.finding(name, KindConfig, e.Key(), e.Value, "planted:"+rules[i])
	}
	how, ok := d.c.keptHow(), false
	if !d.c.opts.KeepArmed {
		if err := d.rewrite(name, hi, gitconfig.CommentOut(data, bad)); err != nil {
			how = "could not disarm: " + err.Error()
		} else {
			how, ok = "commented out", true
		}
	}
	for _, f := range found {
		f.How, f.Disarmed = how, ok
		d.add(f)
	}
}

// readRegular reads name, a regular file of at most max bytes, through a
// descriptor opened without following a link, and returns its content and
// the descriptor's stat (ok is false when it is not, or cannot be read).
func (d *dirCheck) readRegular(name string, max int64) (data []byte, fi fs.FileInfo, ok bool) {
	h, err := d.g.OpenFile(name, os.O_RDONLY|oNoFollow|oNonblock, 0)
	if err != nil {
		return nil, nil, false
	}
	defer h.Close()
	data, err = io.ReadAll(io.LimitReader(h, max+1))
	if err != nil || int64(len(data)) > max {
		return nil, nil, false
	}
	fi, err = h.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, false
	}
	return data, fi, true
}

// rewrite replaces name with data: a temporary file in the same directory,
// with the same permissions, synced and renamed over it, provided name is
// still the file that was read.
func (d *dirCheck) rewrite(name string, was fs.FileInfo, data []byte) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".cordon-"+hex.EncodeToString(rnd[:]))
	w, err := d.g.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("rewriting %s: %w", name, err)
	}
	_, err = w.Write(data)
	if err == nil {
		err = w.Chmod(was.Mode().Perm())
	}
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if now, lerr := d.g.Lstat(name); lerr != nil || statOf(now).ino != statOf(was).ino {
			err = fmt.Errorf("%s was replaced while cordon examined it", name)
		}
	}
	if err == nil {
		err = d.g.Rename(tmp, name)
	}
	if err != nil {
		_ = d.g.Remove(tmp)
		return fmt.Errorf("rewriting %s: %w", name, err)
	}
	return nil
}

// commondir checks a commondir file that appeared or changed. cordon's own
// placeholder (".") is ignored, and so is a new worktree's "../..", which
// points at the repository it belongs to.
func (d *dirCheck) commondir() {
	fi, err := d.g.Lstat("commondir")
	if err != nil {
		return
	}
	if d.prev != nil && d.prev.commondir != nil && d.prev.commondir.same(fi) {
		return
	}
	var content []byte
	if fi.Mode()&fs.ModeSymlink != 0 {
		t, _ := d.g.Readlink("commondir")
		content = []byte("symbolic link to " + t)
	} else if content, err = readSmall(d.g, "commondir", maxSmall); err != nil {
		return
	}
	c := string(content)
	if c == "." || c == ".\n" {
		return
	}
	if d.prev != nil && d.prev.commondir != nil && string(d.prev.commondir.content) == c {
		return
	}
	// A linked worktree's own commondir names its repository: harmless
	// only when that is a git directory this check looks at too (else a
	// crafted "common directory" without HEAD would lend its config).
	if filepath.Base(filepath.Dir(d.abs)) == "worktrees" && strings.TrimRight(c, "\n") == "../.." &&
		isGitDir(d.root, filepath.Join(d.rel, "..", "..")) {
		return
	}
	if !d.planted(fi) {
		return
	}
	f := d.finding("commondir", KindCommondir, "commondir", strings.TrimRight(c, "\n"), "planted:commondir")
	d.disarmRename(&f, "commondir", "renamed to commondir"+DisarmedSuffix)
	d.add(f)
}
