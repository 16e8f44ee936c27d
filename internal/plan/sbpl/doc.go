// Package sbpl writes and checks profiles in SBPL, the Scheme-like
// sandbox profile language of macOS's Seatbelt (sandbox-exec -p).
//
// It owns three things: a writer (Profile) that emits rules such as
//
//	(version 1)
//	(deny default (with message "cordon-RUN"))
//	(allow file-read* (subpath (param "R0")))
//	(deny file-write* (require-all (subpath (param "W0")) (regex #"/\.git/hooks(/|$)")))
//
// (and, with Continue, appends rules to a profile already written: cordon
// adds the network proxy's ports, known only at launch, that way), the
// translation of a policy's glob into a regex (GlobRegex), and a
// parser-level check (Check) that a profile is well-formed: balanced
// parentheses, every string closed, only the operations of Operations and
// the filters of Filters. Check is not macOS's own parser; it accepts a
// small, documented subset, which is all this writer produces.
//
// What it must not do: paste a path into a profile. Every path is a
// parameter, (param "W0"), whose value travels beside the profile (on
// sandbox-exec's command line as -D W0=/real/path, see Profile.Params), so
// no character of a path (a quote, a parenthesis, a newline, a ";") can
// change the profile's structure; the profile text is the same for any
// paths. The few other strings (a mach service name, an address, the run
// tag) go through Quote, which escapes '"' and '\' and refuses control
// characters. Operation names are constants of this package.
//
// Globs. SBPL cannot build a regex from a parameter, so a deny glob such as
// "**/.env" cannot be anchored on a parameterised root inside the regex.
// GlobRegex instead emits a regex that matches the glob below any
// directory ("/\.env(/|$)", searched in the absolute path), built only
// from the pattern, which comes from the policy and never from the command
// or a path; every regex metacharacter of the pattern is escaped. A caller
// confines the regex to a root by combining it with the root's subpath
// filter in (require-all ...). Since no path is ever part of a regex, a
// path's characters cannot widen it. The regex matches a superset of what
// the glob matches below the root (a glob anchored at the root matches at
// any depth; '?' and classes match more than one character, whatever a
// multi-byte character counts as in the engine): it is meant for deny
// rules, where matching more only denies more. It is never used to allow.
//
// The package is pure Go and builds on every GOOS: cordon generates and
// checks Seatbelt profiles on Linux too (cordon policy --backend seatbelt
// --explain, and the golden files of package plan).
package sbpl
