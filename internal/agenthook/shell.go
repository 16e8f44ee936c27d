package agenthook

import "strings"

// Quote returns s as one POSIX shell word: single quotes around it; each
// single quote inside ends the quoting, is escaped with a backslash, and
// the quoting starts again. No character is special inside single quotes,
// so the word is s literally whatever s holds: $(...), backticks,
// newlines, globs, quotes.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Wrap returns the shell command that runs command confined: cordon run
// with the workspace ws, running bash -c command. Every variable part is
// one word made by Quote, so the agent's command is bash's argument, never
// part of the outer command line.
func Wrap(cordon, ws, command string) string {
	return wrapPrefix(cordon, ws) + Quote(command)
}

// wrapPrefix is what Wrap puts before the quoted command.
func wrapPrefix(cordon, ws string) string {
	return Quote(cordon) + " run --workspace " + Quote(ws) + " -- bash -c "
}

// IsWrapped reports whether command is exactly what Wrap makes for cordon
// and ws: the prefix, then one shell word made only of single-quoted runs
// and \' escapes (what Quote writes). Such a word is one literal argument,
// so nothing in it runs outside the sandbox. Anything else (a second word,
// an operator, an unquoted character) is not wrapped.
func IsWrapped(command, cordon, ws string) bool {
	rest, ok := strings.CutPrefix(command, wrapPrefix(cordon, ws))
	if !ok || rest == "" {
		return false
	}
	for rest != "" {
		switch {
		case rest[0] == '\'':
			end := strings.IndexByte(rest[1:], '\'')
			if end < 0 {
				return false
			}
			rest = rest[end+2:]
		case strings.HasPrefix(rest, `\'`):
			rest = rest[2:]
		default:
			return false
		}
	}
	return true
}

// WrapArgv is Wrap for a command given as an argv: cordon run's argv
// before it.
func WrapArgv(cordon, ws string, argv []string) []string {
	return append([]string{cordon, "run", "--workspace", ws, "--"}, argv...)
}
