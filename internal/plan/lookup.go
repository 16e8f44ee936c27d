package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/policy"
)

// lookupNotes says, for the program the command starts, what the
// sandbox's PATH finds on the host that it does not find inside: the
// program the command names (command[0], or the first word of a shell's
// -c script) is looked up outside, in the PATH the sandbox gets, and each
// candidate decided as an exec by the policy. When the first one outside
// is not visible inside and a later one is, the program changes (a pyenv
// shim, ~/.local/bin/python3 shadowing /usr/bin/python3): one run note says
// both and the flag, before the run (pl.Lookup.Note). When none is
// visible, pl.Lookup.NotFound holds the line the launcher says if the
// command is not found (exit 127). On the Landlock-only backend, which hides nothing from a lookup,
// the first candidate is found and its exec refused (exit 126): the helper
// goes on to the next candidate, a shell does not. A candidate that a deny
// rule hides (a secret), or whose directory no flag may name, is never
// suggested.
func lookupNotes(pl *Plan, p *policy.Policy, command []string, home string) {
	if pl.Backend != backend.Bwrap && pl.Backend != backend.Landlock {
		return
	}
	name, script := programName(command)
	if name == "" {
		return
	}
	var pathVar string
	for _, kv := range pl.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	var dec *policy.Decider
	pl.Lookup.PATH = pathVar
	outside, inside := "", ""
	for _, dir := range filepath.SplitList(pathVar) {
		if !filepath.IsAbs(dir) {
			continue // the helper skips them too (exec.ErrDot)
		}
		c := filepath.Join(dir, name)
		fi, err := os.Stat(c)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		if dec == nil {
			dec = p.Decider(home)
		}
		visible := !dec.Decide(policy.OpExec, c).Denied
		if outside == "" {
			outside = c
		}
		if visible {
			inside = c
			break
		}
	}
	if outside == "" || outside == inside {
		return
	}
	landlock := pl.Backend == backend.Landlock
	if landlock && script {
		inside = "" // the shell stops at the first, refused
	}
	d := dec.Decide(policy.OpExec, outside)
	if d.Secret || d.Fix == "" {
		return
	}
	fix := tildeFlag(d.Fix, home)
	if inside == "" {
		pl.Lookup.Code, pl.Lookup.NotFound = 127, fmt.Sprintf("%s was not found inside; it is %s outside: %s", name, quoted(outside), fix)
		if landlock {
			pl.Lookup.Code, pl.Lookup.NotFound = 126, fmt.Sprintf("%s is %s, which this run may not execute: %s", name, quoted(outside), fix)
		}
		return
	}
	pl.Lookup.Note = fmt.Sprintf("%s is %s outside but %s inside, where %s is not visible: %s runs the same program", name, quoted(outside), quoted(inside), quoted(tildeDir(filepath.Dir(outside), home)), fix)
	pl.RunNotes = append(pl.RunNotes, pl.Lookup.Note)
}

// programName is the program the command starts by name, looked up on
// PATH: command[0] when it holds no slash, or, for a shell's
// `-c SCRIPT`, the script's first word when it is a plain name (script
// is then set); "" when there is none.
func programName(command []string) (name string, script bool) {
	switch filepath.Base(command[0]) {
	case "sh", "bash", "dash", "zsh":
		if len(command) >= 3 && command[1] == "-c" {
			word, _, _ := strings.Cut(strings.TrimSpace(command[2]), " ")
			if plainName(word) {
				return word, true
			}
			return "", false
		}
	}
	if plainName(command[0]) {
		return command[0], false
	}
	return "", false
}

// plainName reports whether s is a program name a PATH lookup takes as
// is: letters, digits and ._+@- only, not starting with a dot.
func plainName(s string) bool {
	if s == "" || s[0] == '.' || s[0] == '-' || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+@-", r)) {
			return false
		}
	}
	return true
}

// tildeFlag shortens the path of a flag ("--allow-read /home/u/go/bin")
// under home to ~/...
func tildeFlag(flag, home string) string {
	f, path, ok := strings.Cut(flag, " ")
	if !ok {
		return flag
	}
	return f + " " + quoted(tildeDir(path, home))
}

// tildeDir shortens a path under home to ~/...
func tildeDir(p, home string) string {
	if home != "" && home != "/" && strings.HasPrefix(p, home+"/") {
		return "~/" + strings.TrimPrefix(p, home+"/")
	}
	return p
}

// quoted is p, quoted when it holds a space or a character that is not
// printable.
func quoted(p string) string {
	for _, r := range p {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\'' {
			return strconv.Quote(p)
		}
	}
	return p
}
