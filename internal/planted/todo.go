package planted

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// KindTodo is an exec line in a git to-do list (an interactive rebase's
// or the sequencer's) that the run added: `git rebase --continue` on the
// host would run its shell command.
const KindTodo = "todo"

// todoFiles are the to-do lists of a git directory that git carries on
// with when the user continues an operation the run left stopped: the
// interactive rebase's (`git rebase --continue`), where an `exec` (`x`)
// line runs its shell command. (The sequencer's todo of a stopped
// cherry-pick or revert parses the same commands, but git refuses an exec
// line there: "cannot cherry-pick during a revert".)
var todoFiles = []string{"rebase-merge/git-rebase-todo"}

// maxTodo bounds the to-do list whose content is recorded and examined: a
// longer one the run made is renamed aside.
const maxTodo = 4 << 20

// recordTodos records the to-do lists of git directory d in s.
func (s *dirState) recordTodos(d string) {
	for _, name := range todoFiles {
		if f := recordFile(filepath.Join(d, name), maxTodo); f != nil {
			if s.todos == nil {
				s.todos = map[string]*fileState{}
			}
			s.todos[name] = f
		}
	}
}

// todos checks each to-do list of the git directory: the exec lines that
// were not there before the run are commented out (git then skips them),
// one finding each; a list that is a link, or too large to examine, is
// renamed aside (the stopped rebase then cannot continue, and says so:
// `git rebase --abort` ends it).
func (d *dirCheck) todos() {
	for _, name := range todoFiles {
		d.todo(name)
	}
}

// todo checks one to-do list.
func (d *dirCheck) todo(name string) {
	fi, err := d.g.Lstat(name)
	if err != nil {
		return
	}
	var old *fileState
	if d.prev != nil {
		old = d.prev.todos[name]
	}
	if old != nil && old.same(fi) || old == nil && !d.planted(fi) {
		return
	}
	if fi.Mode()&fs.ModeSymlink != 0 || fi.Size() > maxTodo {
		target, _ := d.g.Readlink(name)
		f := d.finding(name, KindTodo, "(to-do list)", target, "planted:todo")
		d.disarmRename(&f, name, "renamed to "+filepath.Base(name)+DisarmedSuffix+"; end the stopped rebase with git rebase --abort")
		d.add(f)
		return
	}
	if !fi.Mode().IsRegular() {
		return
	}
	data, hi, ok := d.readRegular(name, maxTodo)
	if !ok {
		return
	}
	had := map[string]int{}
	if old != nil {
		if old.content == nil {
			d.c.note(fmt.Sprintf("%s could not be compared with its content before the run", filepath.Join(d.abs, name)))
			return
		}
		for _, l := range execLines(old.content) {
			had[l]++
		}
	}
	var bad []string
	for _, l := range execLines(data) {
		if had[l] > 0 {
			had[l]--
			continue
		}
		bad = append(bad, l)
	}
	if len(bad) == 0 {
		return
	}
	how, ok := d.c.keptHow(), false
	if !d.c.opts.KeepArmed {
		if err := d.rewrite(name, hi, commentExecLines(data, bad)); err != nil {
			how = "could not disarm: " + err.Error()
		} else {
			how, ok = "commented out", true
		}
	}
	for _, l := range bad {
		f := d.finding(name, KindTodo, "exec", l, "planted:todo-exec")
		f.How, f.Disarmed = how, ok
		d.add(f)
	}
}

// execLines returns the exec lines of a to-do list, as written (without
// the line end): git reads a line whose first word, after blanks, is
// "exec" or "x" as a shell command to run.
func execLines(data []byte) []string {
	var out []string
	for _, l := range bytes.Split(data, []byte("\n")) {
		if isExecLine(l) {
			out = append(out, strings.TrimSuffix(string(l), "\r"))
		}
	}
	return out
}

// isExecLine reports whether l is an exec line (git's parse_insn_line:
// leading blanks skipped, the command word followed by a blank or the end).
func isExecLine(l []byte) bool {
	l = bytes.TrimLeft(l, " \t")
	for _, cmd := range []string{"exec", "x"} {
		if rest, ok := bytes.CutPrefix(l, []byte(cmd)); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r') {
			return true
		}
	}
	return false
}

// commentExecLines returns data with each of the lines bad (as execLines
// returns them, each once) commented out: git skips a line that starts
// with its comment character, "#" unless core.commentChar says otherwise
// (another one makes git stop at the line as unknown: it runs nothing).
func commentExecLines(data []byte, bad []string) []byte {
	left := map[string]int{}
	for _, l := range bad {
		left[l]++
	}
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		k := strings.TrimSuffix(string(l), "\r")
		if left[k] > 0 && isExecLine(l) {
			left[k]--
			lines[i] = append([]byte("# cordon disarmed: "), l...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}
