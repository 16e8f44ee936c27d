package policy

import (
	"os"
	"strings"
)

// DecideHost returns the verdict on op of path, absolute and clean, when a
// program outside the sandbox makes the access on the host on behalf of
// the sandboxed agent: an agent's own file tools, which a hook lets
// through or refuses (see cordon hook). It is Decide, except that what
// exists only inside the sandbox is not the host's: the private /tmp, the
// sandbox's own /proc and /dev, cordon's helper directory, and the
// directories above an allowed path, which inside hold only what is bound
// and on the host hold everything. Each of those is refused as not listed,
// with no Fix (no flag shows the host's tree to the sandbox).
func (d *Decider) DecideHost(op Op, path string) Decision {
	dec := d.Decide(op, path)
	if dec.Denied {
		return dec
	}
	switch dec.Rule {
	case ruleTmp, ruleProc, ruleDev, ruleHelper, ruleAbove:
		rule := ruleReadNo
		if op == OpWrite {
			rule = ruleWriteNo
		}
		return Decision{Denied: true, Rule: rule + " (" + dec.Rule + " is the sandbox's own, not the host's)"}
	}
	return dec
}

// DecideHostCreate is DecideHost(OpWrite, path) for an open that creates
// path, a file the host does not have: where no flag is suggested only
// because the directory that would hold it is too broad to name (the
// home, /) and the file does not exist yet, the Fix names the file
// itself, as once it is made ("--allow-write ~/new.txt"), unless a
// relative deny glob would hide it (then a secret). A lock file (a name
// ending in .lock) never has a Fix: its program renames it over the file
// it locks, which is refused, and a lock left on the host blocks the
// host's own program (git refuses to write a config whose config.lock
// exists). Every other denial is DecideHost's: a protected, deny_write or
// git directory path, a system directory, the sandbox's own trees.
func (d *Decider) DecideHostCreate(path string) Decision {
	dec := d.DecideHost(OpWrite, path)
	if dec.Denied && !dec.Secret && strings.HasSuffix(path, ".lock") {
		if _, err := os.Lstat(path); err != nil {
			return Decision{Denied: true, Rule: dec.Rule}
		}
	}
	if !dec.Denied || dec.Secret || dec.Fix != "" || dec.Rule != ruleWriteNo && dec.Rule != ruleWriteRO {
		return dec
	}
	if _, err := os.Lstat(path); err == nil || d.tooBroad(path, true) {
		return dec
	}
	return d.notListed(dec.Rule, "--allow-write ", path, path)
}

// Askable reports whether a person may be asked to allow the access d
// refused (cordon run --ask): only a path that no entry names, outside
// every read (or write) path, for which a flag would be suggested. A
// secret (a deny entry or glob), a deny_write or protected path, a git
// directory's entry, cordon's own config, a system directory and what
// exists only inside the sandbox never are.
func (d Decision) Askable() bool {
	if !d.Denied || d.Secret || d.Fix == "" {
		return false
	}
	switch d.Rule {
	case ruleReadNo, ruleWriteNo, ruleWriteRO:
		return true
	}
	return false
}
