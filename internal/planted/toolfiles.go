package planted

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
)

// KindToolFile is a file of a Python virtual environment that runs code
// (a .pth file, sitecustomize.py, an activate script, pyvenv.cfg: the rows
// of policy.ToolFiles that stay writable during the run).
const KindToolFile = "toolfile"

// Bounds of the virtual environments' check.
const (
	// maxVenvFile is the largest activate script, .pth or pyvenv.cfg
	// whose content is recorded and compared.
	maxVenvFile = 1 << 20
	// maxRecord is the largest RECORD read.
	maxRecord = 8 << 20
	// maxVenvEntries bounds the entries of one site-packages directory.
	maxVenvEntries = 100_000
)

// activateScripts are the scripts of a virtual environment's bin
// directory that a user sources or runs to enter it.
var activateScripts = []string{"activate", "activate.csh", "activate.fish", "activate.nu", "Activate.ps1", "activate_this.py"}

// siteStartup are the modules of site-packages that python imports at
// every start.
var siteStartup = []string{"sitecustomize.py", "usercustomize.py"}

// probeRoot is prober.probe through r's own lookups: dir opened as a
// root, each name an lstat in it (one that fails otherwise than "does not
// exist" counts as present, to be looked at).
func probeRoot(r *os.Root, dir string, names []string, present []bool) bool {
	d, err := r.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer d.Close()
	for i, n := range names {
		_, err := d.Lstat(n)
		present[i] = !errors.Is(err, fs.ErrNotExist)
	}
	return true
}

// venvRoots are the directories, relative to a writable root, where the
// virtual environments cordon watches lie: the root itself, each directory
// at its top (.venv, venv, env, ...), DIR/.venv and DIR/venv one level
// down, and the environments of tox and nox.
func venvRoots(r *os.Root) []string {
	out := []string{}
	isVenv := func(rel string) bool {
		fi, err := r.Lstat(filepath.Join(rel, "pyvenv.cfg"))
		return err == nil && fi.Mode().IsRegular()
	}
	if isVenv(".") {
		out = append(out, ".")
	}
	top, err := readRootDir(r, ".", maxVenvEntries)
	if err != nil {
		return out
	}
	pr := newProber(r)
	defer pr.close()
	subs, probes := []string{".", ".venv", "venv"}, []string{"pyvenv.cfg", ".venv", "venv"}
	present := make([]bool, len(probes))
	for _, e := range top {
		if !e.IsDir() || e.Name() == ".git" || e.Name() == "node_modules" {
			continue
		}
		n := e.Name()
		// One descriptor of n answers the common case, where none of
		// the three is there (a workspace of many repositories); what
		// is there is then looked up through r.
		if !pr.probe(r, n, probes, present) {
			continue
		}
		for i, sub := range subs {
			if !present[i] {
				continue
			}
			if p := filepath.Join(n, sub); isVenv(p) {
				out = append(out, p)
			}
		}
		if n == ".tox" || n == ".nox" {
			ents, _ := readRootDir(r, n, 1000)
			for _, s := range ents {
				if s.IsDir() && isVenv(filepath.Join(n, s.Name())) {
					out = append(out, filepath.Join(n, s.Name()))
				}
			}
		}
	}
	return out
}

// readRootDir lists up to n entries of rel under r.
func readRootDir(r *os.Root, rel string, n int) ([]fs.DirEntry, error) {
	d, err := r.OpenFile(rel, os.O_RDONLY|oNoFollow|oDirectory, 0)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(n)
	if len(ents) > 0 {
		err = nil
	}
	return ents, err
}

// venvFile is one watched file of a virtual environment.
type venvFile struct {
	rel  string // relative to the root
	kind string // "activate", "site", "cfg"
	row  string // the policy.ToolFiles row
}

// venvFiles lists the watched files that exist in the virtual environment
// v (relative to r): pyvenv.cfg, the activate scripts, and the .pth files
// and start-up modules of each lib/python*/site-packages.
func venvFiles(r *os.Root, v string) []venvFile {
	out := []venvFile{{rel: filepath.Join(v, "pyvenv.cfg"), kind: "cfg", row: "**/pyvenv.cfg"}}
	for _, a := range activateScripts {
		rel := filepath.Join(v, "bin", a)
		if _, err := r.Lstat(rel); err == nil {
			out = append(out, venvFile{rel: rel, kind: "activate", row: "**/bin/" + a})
		}
	}
	for _, sp := range sitePackages(r, v) {
		ents, _ := readRootDir(r, sp, maxVenvEntries)
		for _, e := range ents {
			n := e.Name()
			switch {
			case strings.HasSuffix(n, ".pth"):
				out = append(out, venvFile{rel: filepath.Join(sp, n), kind: "site", row: "**/site-packages/*.pth"})
			case slices.Contains(siteStartup, n):
				out = append(out, venvFile{rel: filepath.Join(sp, n), kind: "site", row: "**/site-packages/" + n})
			}
		}
	}
	return out
}

// sitePackages returns the site-packages directories of the virtual
// environment v: lib/python*/site-packages (not through a link: lib64 is
// one to lib).
func sitePackages(r *os.Root, v string) []string {
	var out []string
	ents, _ := readRootDir(r, filepath.Join(v, "lib"), 1000)
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), "python") {
			sp := filepath.Join(v, "lib", e.Name(), "site-packages")
			if fi, err := r.Lstat(sp); err == nil && fi.IsDir() {
				out = append(out, sp)
			}
		}
	}
	return out
}

// WithVenvs records, besides what Snapshot recorded, the virtual
// environments in roots (see venvRoots) and their watched files (see
// policy.ToolFiles), so that Check can tell what the run changed there and
// how. It returns b.
func (b *Before) WithVenvs(roots []string) *Before {
	if b.venvFiles == nil {
		b.venvFiles = map[string]fileState{}
		b.venvs = map[string]bool{}
	}
	for _, root := range roots {
		root = filepath.Clean(root)
		b.venvRootsGiven = append(b.venvRootsGiven, root)
		r, err := os.OpenRoot(root)
		if err != nil {
			continue
		}
		for _, v := range venvRoots(r) {
			b.venvs[filepath.Join(root, v)] = true
			for _, f := range venvFiles(r, v) {
				if s := recordRootFile(r, f.rel, maxVenvFile); s != nil {
					b.venvFiles[filepath.Join(root, f.rel)] = *s
				}
			}
		}
		r.Close()
	}
	return b
}

// recordRootFile is recordFile through r.
func recordRootFile(r *os.Root, rel string, max int64) *fileState {
	fi, err := r.Lstat(rel)
	if err != nil {
		return nil
	}
	s := statOf(fi)
	if fi.Mode().IsRegular() && fi.Size() <= max {
		if data, err := readSmall(r, rel, max+1); err == nil && int64(len(data)) <= max {
			s.content = data
		}
	}
	return &s
}

// checkVenvs compares the virtual environments in the roots with what
// WithVenvs recorded (or, for a Before without that record, takes what
// changed since the snapshot for the run's), and reports, and unless
// KeepArmed disarms, what policy.ToolFiles says: a .pth with an import line
// or a start-up module that no distribution's RECORD lists as it is now is
// renamed aside; an activate script of an environment that existed before
// the run that the run changed is restored (its new version renamed aside);
// a changed pyvenv.cfg is reported.
func (c *checker) checkVenvs(roots []string) {
	for _, root := range roots {
		root = filepath.Clean(root)
		r, err := os.OpenRoot(root)
		if err != nil {
			continue
		}
		for _, v := range venvRoots(r) {
			if c.ignored(filepath.Join(root, v)) {
				continue
			}
			records := map[string]map[string]string{}
			for _, f := range venvFiles(r, v) {
				c.checkVenvFile(r, root, v, f, records)
			}
		}
		r.Close()
	}
}

// checkVenvFile checks one watched file of the virtual environment v.
func (c *checker) checkVenvFile(r *os.Root, root, v string, f venvFile, records map[string]map[string]string) {
	abs := filepath.Join(root, f.rel)
	fi, err := r.Lstat(f.rel)
	if err != nil || c.ignored(abs) {
		return
	}
	was, known := c.b.venvFiles[abs]
	switch {
	case known && was.same(fi):
		return
	case !known && !c.recent(fi):
		return
	}
	now := recordRootFile(r, f.rel, maxVenvFile)
	if known && now != nil && was.content != nil && bytes.Equal(was.content, now.content) && was.mode == now.mode {
		return // rewritten as it was
	}
	fd := Finding{Path: abs, Rel: f.rel, Kind: KindToolFile, Key: filepath.Base(f.rel), Rule: "toolfile:" + f.row}
	var content []byte
	if now != nil {
		content = now.content
	}
	switch f.kind {
	case "cfg":
		if !known && !c.venvExisted(root, v) {
			return // a new environment
		}
		fd.Value = changedLine(was.content, content)
		fd.How = "changed during the run; left in place (review it: it decides which python the environment runs)"
	case "activate":
		if !c.venvExisted(root, v) {
			return // made with a new environment
		}
		fd.Value = changedLine(was.content, content)
		c.disarmActivate(r, &fd, f.rel, was, known)
	case "site":
		sp := filepath.Dir(f.rel)
		if listedInRecord(r, sp, filepath.Base(f.rel), content, records) {
			return // installed by pip, as RECORD says
		}
		if strings.HasSuffix(f.rel, ".pth") {
			line, ok := pthImport(content)
			if !ok {
				return // paths only: nothing runs
			}
			fd.Value = line
		} else {
			fd.Value = changedLine(nil, content)
		}
		switch {
		case c.opts.KeepArmed:
			fd.How = c.keptHow()
		default:
			if to, err := renameAside(r, f.rel); err != nil {
				fd.How = "could not disarm: " + err.Error()
			} else {
				fd.Disarmed, fd.How = true, "renamed to "+filepath.Base(to)+" (no installed distribution's RECORD lists it)"
			}
		}
	}
	c.findings = append(c.findings, fd)
}

// venvExisted reports whether the virtual environment v existed before the
// run: WithVenvs found it, or, without that record, its pyvenv.cfg is
// older than the snapshot.
func (c *checker) venvExisted(root, v string) bool {
	if c.b.venvs != nil {
		return c.b.venvs[filepath.Join(root, v)]
	}
	fi, err := os.Lstat(filepath.Join(root, v, "pyvenv.cfg"))
	return err == nil && !c.recent(fi)
}

// disarmActivate renames the run's version of the activate script rel
// aside and, when the snapshot holds the version from before the run,
// writes that back.
func (c *checker) disarmActivate(r *os.Root, f *Finding, rel string, was fileState, known bool) {
	if c.opts.KeepArmed {
		f.How = c.keptHow()
		return
	}
	to, err := renameAside(r, rel)
	if err != nil {
		f.How = "could not disarm: " + err.Error()
		return
	}
	f.Disarmed = true
	f.How = "renamed to " + filepath.Base(to)
	if !known || was.content == nil || !was.mode.IsRegular() {
		return
	}
	w, err := r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, was.mode.Perm())
	if err != nil {
		return
	}
	_, werr := w.Write(was.content)
	cerr := w.Close()
	if werr == nil && cerr == nil {
		f.How += "; the version from before the run is restored"
	}
}

// pthImport returns the first line of a .pth file that python executes
// (one starting with "import" and a space or a tab; see the site module).
func pthImport(data []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxVenvFile)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "import ") || strings.HasPrefix(l, "import\t") {
			return truncate(l), true
		}
	}
	return "", false
}

// changedLine returns the first line of now that was not in was (what a
// run appended or changed), truncated.
func changedLine(was, now []byte) string {
	old := map[string]bool{}
	for l := range strings.SplitSeq(string(was), "\n") {
		old[l] = true
	}
	for l := range strings.SplitSeq(string(now), "\n") {
		if strings.TrimSpace(l) != "" && !old[l] {
			return truncate(l)
		}
	}
	return ""
}

// truncate bounds a value shown to the user.
func truncate(s string) string {
	if len(s) > maxValue {
		return s[:maxValue] + "..."
	}
	return s
}

// listedInRecord reports whether a RECORD of a distribution installed in
// site-packages sp lists name with the sha256 of content: the file is as
// pip installed it. records caches each site-packages' RECORD entries.
func listedInRecord(r *os.Root, sp, name string, content []byte, records map[string]map[string]string) bool {
	if content == nil {
		return false
	}
	m, ok := records[sp]
	if !ok {
		m = map[string]string{}
		ents, _ := readRootDir(r, sp, maxVenvEntries)
		for _, e := range ents {
			if !e.IsDir() || !strings.HasSuffix(e.Name(), ".dist-info") {
				continue
			}
			data, err := readSmall(r, filepath.Join(sp, e.Name(), "RECORD"), maxRecord)
			if err != nil {
				continue
			}
			for l := range strings.SplitSeq(string(data), "\n") {
				// path,sha256=<urlsafe base64, unpadded>,size; a path
				// with a comma is quoted (csv).
				i := strings.LastIndex(l, ",")
				if i < 0 {
					continue
				}
				j := strings.LastIndex(l[:i], ",")
				if j < 0 {
					continue
				}
				p := l[:j]
				if u, err := strconv.Unquote(p); err == nil {
					p = u
				}
				if h, ok := strings.CutPrefix(l[j+1:i], "sha256="); ok && !strings.Contains(p, "/") {
					m[p] = h
				}
			}
		}
		records[sp] = m
	}
	h, ok := m[name]
	if !ok {
		return false
	}
	sum := sha256.Sum256(content)
	return h == base64.RawURLEncoding.EncodeToString(sum[:])
}

// toolFileValue returns the first setting of the tool file rel (its
// first line that is neither blank nor a comment), truncated, for the
// warning to show what the run wrote; "" for a directory or an unreadable
// file.
func toolFileValue(r *os.Root, rel string) string {
	data, err := readSmall(r, rel, 64<<10)
	if err != nil {
		return ""
	}
	for l := range strings.SplitSeq(string(data), "\n") {
		t := strings.TrimSpace(l)
		header := strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") // a TOML or INI section
		if t != "" && !header && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, ";") && !strings.HasPrefix(t, "//") {
			return truncate(t)
		}
	}
	return ""
}

// venvWarning is Finding.Warning's text for a KindToolFile finding.
func venvWarning(f Finding) string {
	what := "changed " + safe(f.Rel)
	switch {
	case strings.HasSuffix(f.Rule, ".pth"):
		what = fmt.Sprintf("planted %s (a line of it runs at every start of the environment's python): %s", safe(f.Rel), strconv.Quote(f.Value))
	case strings.HasSuffix(f.Rule, "customize.py"):
		what = fmt.Sprintf("planted %s (python imports it at every start)", safe(f.Rel))
	case f.Value != "":
		what = fmt.Sprintf("changed %s during the run (%s): %s", safe(f.Rel), toolOf(f.Rule), strconv.Quote(f.Value))
	}
	if f.Disarmed {
		return what + ": disarmed (" + f.How + ")"
	}
	return what + ": " + f.How
}

// toolOf returns what policy.ToolFiles says runs through the row of rule.
func toolOf(rule string) string {
	row := strings.TrimPrefix(rule, "toolfile:")
	for _, t := range policy.ToolFiles {
		if t.Path == row {
			return t.Runs
		}
	}
	return row
}
