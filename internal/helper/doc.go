// Package helper is the part of cordon that runs inside the sandbox. The
// launcher starts bwrap with the helper's binary (cmd/cordon-helper, or a
// library host's own) as the command and the hidden subcommand
// helperspec.HelperCommand; the helper reads its
// helperspec.Spec from an inherited descriptor (never the environment or
// argv), applies it, reports readiness to the host, and execs the user's
// command.
//
// It depends on the contract (helperspec) and the enforcers (landlock,
// seccomp) only, never on the planner: a test checks it.
//
// The helper is built only for Linux: on other systems Main refuses with
// exit status 125 and says so.
package helper
