// Package result describes what happened when a confined command ran: its
// exit status, how it ended, what the sandbox denied and what it used.
//
// It is plain data, with the JSON of `cordon run --json-out` (docs/json.md)
// and the one-line wording of each finding. It must not import anything of
// cordon's but package backend, so every front end and the library can
// return it.
package result

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/backend"
)

// Exit statuses cordon itself gives (docs/install.md lists them).
const (
	// ExitTimeout is the status when --timeout fired.
	ExitTimeout = 124
	// ExitGitConfigRefused is the status when the command exited 0 but
	// a git command in it could not write a git directory's config,
	// which the sandbox keeps read-only (Result.GitConfigRefused): git
	// branch -u and git submodule add say they succeeded all the same.
	ExitGitConfigRefused = 1
	// ExitSetup is the status when cordon failed before running the command.
	ExitSetup = 125
	// ExitCannotExec is the status when the command exists but cannot run.
	ExitCannotExec = 126
	// ExitNotFound is the status when the command was not found.
	ExitNotFound = 127
)

// Result is the outcome of one confined run.
type Result struct {
	// ExitCode is the status cordon exits with: the command's own, 128+N
	// if it died of signal N, 124 on timeout, 126/127 if it could not run.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that ended the command, or 0.
	Signal int `json:"signal,omitempty"`
	// TimedOut reports that --timeout fired and the tree was killed.
	TimedOut bool `json:"timed_out,omitempty"`
	// Backend names the backend that enforced the policy.
	Backend backend.Name `json:"backend"`
	// Degraded lists the rules the backend could not enforce.
	Degraded []string `json:"degraded,omitempty"`
	// Violations lists the distinct denials the violation monitor
	// observed (see Monitor), each once with its count.
	Violations []Violation `json:"violations,omitempty"`
	// Monitor is what the violation monitor saw, when it ran (nil
	// otherwise).
	Monitor *Monitor `json:"monitor,omitempty"`
	// Usage is the resource usage of the whole run.
	Usage Usage `json:"usage"`
	// LimitsReached lists the resource limits the run reached, each with
	// the evidence the kernel gave (see LimitHit); cordon run prints one
	// line for each.
	LimitsReached []LimitHit `json:"limits_reached,omitempty"`
	// Planted lists what the run left in its writable trees to run later
	// on the host (git hooks, config keys, ...), disarmed unless the run
	// kept it armed.
	Planted []Planted `json:"planted,omitempty"`
	// PlantedIncomplete says what the check for planted files did not
	// cover (it is bounded), or is empty.
	PlantedIncomplete string `json:"planted_incomplete,omitempty"`
	// NetRefused lists the distinct hosts and ports the network proxy
	// refused (filtered network), in the order first refused; cordon run
	// prints one line for each.
	NetRefused []NetRefusal `json:"network_refused,omitempty"`
	// NetRefusedMore counts the refused requests NetRefused does not list
	// (it keeps the first 50 distinct hosts and ports).
	NetRefusedMore int `json:"network_refused_more,omitempty"`
	// GitConfigRefused lists the git config files (a git directory's
	// config or config.worktree) that a git command in the run could not
	// write, as the sandbox keeps them read-only; cordon run says so in
	// one line, and exits with ExitGitConfigRefused where the command
	// exited 0.
	GitConfigRefused []string `json:"git_config_refused,omitempty"`
}

// NetRefusal is one host and port the network proxy refused during a run.
type NetRefusal struct {
	// Host is the canonical host the command asked for (a name or an IP).
	Host string `json:"host"`
	// Port is the port it asked for; 0 for a name the command looked up
	// on a denied network (it never got as far as a port).
	Port int `json:"port,omitempty"`
	// Rule is the entry or built-in reason that refused it.
	Rule string `json:"rule"`
	// Allow is the --allow-net entry that would allow it, or "" when
	// none would or cordon does not offer one (a loopback or metadata
	// address).
	Allow string `json:"allow,omitempty"`
	// Hint says, when Allow is "", why no entry is offered: a deny entry
	// refused it, the address it reached is special, its TLS server name
	// differed.
	Hint string `json:"hint,omitempty"`
}

// Line is the line cordon prints about f (after "cordon: network: "),
// e.g. "refused example.org:443 (no allow rule); allow it with
// --allow-net example.org:443".
func (f NetRefusal) Line() string {
	if f.Port == 0 {
		// A lookup on a denied network: "denied registry.example
		// (network deny, set by --net deny); allow it with --allow-net
		// registry.example in place of --net deny".
		s := fmt.Sprintf("denied %s (%s)", f.Host, f.Rule)
		switch {
		case f.Allow != "" && f.Hint != "":
			return s + "; allow it with --allow-net " + f.Allow + " " + f.Hint
		case f.Allow != "":
			return s + "; allow it with --allow-net " + f.Allow
		case f.Hint != "":
			return s + "; " + f.Hint
		}
		return s
	}
	s := fmt.Sprintf("refused %s (%s)", net.JoinHostPort(f.Host, strconv.Itoa(f.Port)), f.Rule)
	switch {
	case f.Allow != "":
		return s + "; allow it with --allow-net " + f.Allow
	case f.Hint != "":
		return s + "; " + f.Hint
	}
	return s + "; no --allow-net entry would allow it"
}

// NetRefusedMoreLine is the line cordon prints (after "cordon: network: ")
// about n refused requests that Result.NetRefused does not list.
func NetRefusedMoreLine(n int) string {
	return fmt.Sprintf("refused %d more requests to hosts and ports not listed here (the audit log, when one is kept, has each)", n)
}

// Planted is one thing a run planted to run later on the host.
type Planted struct {
	// Path is the file concerned.
	Path string `json:"path"`
	// Kind is hook, config, commondir or name.
	Kind string `json:"kind"`
	// Key is the config key, the hook's name or the protected name.
	Key string `json:"key,omitempty"`
	// Rule names what matched, e.g. "planted:core.fsmonitor".
	Rule string `json:"rule"`
	// Disarmed reports that cordon disarmed it.
	Disarmed bool `json:"disarmed"`
	// Warning is the line cordon printed about it.
	Warning string `json:"warning"`
}

// Violation is one denied operation.
type Violation struct {
	// Operation is file-read, file-write, file-exec, network-connect, ...
	Operation string `json:"operation"`
	// Path is the file concerned, if any.
	Path string `json:"path,omitempty"`
	// Address is the internet address (host:port) of a network
	// operation, if any.
	Address string `json:"address,omitempty"`
	// Rule is the policy entry that decided.
	Rule string `json:"rule,omitempty"`
	// Allow is the flag that would allow it, or "" when none is
	// suggested.
	Allow string `json:"allow,omitempty"`
	// Locked says that no change should allow it: a secret, or a path
	// protected because code placed there runs later on the host.
	Locked bool `json:"locked,omitempty"`
	// Unenforced, when not empty, says why the policy denies it but it
	// happened all the same: mode permissive, or a backend that cannot
	// enforce it (the Landlock-only backend cannot keep a denied or
	// protected path inside a writable root from the command). Its audit
	// record's action is "warned".
	Unenforced string `json:"unenforced,omitempty"`
	// Command is the program that made the call, when known (its name).
	Command string `json:"command,omitempty"`
	// Count is how many times it happened.
	Count int `json:"count"`
}

// Monitor is what the violation monitor saw of a run.
type Monitor struct {
	// Calls counts the watched calls.
	Calls int64 `json:"calls"`
	// Unresolved counts the watched calls whose path or address could
	// not be read (see monitor.Stats).
	Unresolved int64 `json:"unresolved,omitempty"`
	// More counts the distinct violations past the cap that are not in
	// Result.Violations.
	More int `json:"more,omitempty"`
	// LoopbackPorts are the loopback TCP and UDP ports the command
	// connected to in mode permissive, where its loopback is the host's,
	// but those it bound itself: under a network of its own it needs
	// them forwarded (cordon learn).
	LoopbackPorts []int `json:"loopback_ports,omitempty"`
	// FromLog says that the denials came from macOS's log (the Seatbelt
	// backend) rather than from watched calls: Calls counts the denials
	// it reported.
	FromLog bool `json:"from_log,omitempty"`
	// Other counts the denials of operations the policy has no name for
	// (macOS: Mach lookups, sysctls, signals), which the profile denies
	// by default and no flag allows; OtherSeen are the first distinct
	// ones, the operation and what it concerned.
	Other     int      `json:"other,omitempty"`
	OtherSeen []string `json:"other_seen,omitempty"`
}

// Usage is the resource usage of a run, summed over the command tree that
// was waited for.
type Usage struct {
	// Wall is the elapsed real time.
	Wall time.Duration `json:"wall_ns"`
	// User is the user CPU time.
	User time.Duration `json:"user_cpu_ns"`
	// System is the system CPU time.
	System time.Duration `json:"system_cpu_ns"`
	// MaxRSSKB is the largest resident set size of any process, in KiB.
	MaxRSSKB int64 `json:"max_rss_kb"`
	// PeakMemoryKB is the whole sandbox's peak memory, in KiB, when it ran
	// in a cgroup or (Windows) a Job Object.
	PeakMemoryKB int64 `json:"peak_memory_kb,omitempty"`
	// PeakProcesses is the most tasks the sandbox had at once (cgroup).
	PeakProcesses int `json:"peak_processes,omitempty"`
	// ForkFailures counts forks refused by the process limit (cgroup).
	ForkFailures int `json:"fork_failures,omitempty"`
	// OOMKills counts processes killed for exceeding the memory limit.
	OOMKills int `json:"oom_kills,omitempty"`
	// Cgroup names the cgroup kind that enforced the limits ("cgroup2",
	// "cgroup1"), or is empty when only rlimits applied.
	Cgroup string `json:"cgroup,omitempty"`
	// Incomplete says which figures leave something out, and why.
	Incomplete []string `json:"incomplete,omitempty"`
}

// The resource limits a LimitHit names.
const (
	LimitCPU       = "cpu"
	LimitMemory    = "memory"
	LimitProcesses = "processes"
	LimitFileSize  = "file-size"
)

// limitWords are how a LimitHit's line names each limit: what it limits,
// the unit of Value ("" for a count) and the flag that sets it.
var limitWords = map[string][3]string{
	LimitCPU:       {"CPU time", " s", "--max-cpu"},
	LimitMemory:    {"memory", " MB", "--max-memory"},
	LimitProcesses: {"process", "", "--max-procs"},
	LimitFileSize:  {"file size", " MB", "--max-file-size"},
}

// LimitHit is a resource limit a run reached, decided from what the kernel
// showed, never from a signal alone that anyone could have sent: the
// command's end by SIGKILL once it had used its CPU seconds (RLIMIT_CPU),
// by SIGXFSZ (RLIMIT_FSIZE), the cgroup's oom_kill counter (memory), its
// refused forks (pids.events max).
type LimitHit struct {
	// Limit is LimitCPU, LimitMemory, LimitProcesses or LimitFileSize.
	Limit string `json:"limit"`
	// Value is the limit: seconds, MB, processes or MB.
	Value int `json:"value"`
	// Killed reports that the command was killed by reaching the limit
	// (rather than a process it started, or a fork it was refused).
	Killed bool `json:"killed"`
	// Certain is false when the evidence only suggests it: the command
	// exited with 128+N, as a shell does when a process it ran was killed
	// by signal N, or the sandbox could not tell a death by signal N from
	// such an exit.
	Certain bool `json:"certain"`
	// Evidence says what showed it, e.g. "SIGKILL after 1.01 s of CPU".
	Evidence string `json:"evidence"`
}

// Line is the one line cordon prints about h (after "cordon: "), e.g.
// "killed: CPU time limit of 1 s reached (--max-cpu)".
func (h LimitHit) Line() string {
	w := limitWords[h.Limit]
	s := fmt.Sprintf("%s limit of %d%s reached (%s)", w[0], h.Value, w[1], w[2])
	switch {
	case h.Killed && h.Certain:
		return "killed: " + s
	case h.Killed:
		return "probably killed: " + s + ": " + h.Evidence
	}
	return s + ": " + h.Evidence
}

// Line words v for its user, as cordon test and on_violation: warn print
// it (without a prefix): what was done to what, by which program, the rule
// that denied it and the flag that would allow it. Paths in home are
// shortened to ~/..., and a name holding control characters is quoted.
func (v Violation) Line(home string) string {
	what := v.Path
	if v.Address != "" {
		what = v.Address
	}
	s := v.Operation + " " + printable(tilde(what, home))
	if v.Command != "" {
		s += " by " + printable(v.Command)
	}
	if v.Count > 1 {
		s += fmt.Sprintf(" (%d times)", v.Count)
	}
	s += ": " + printable(tilde(v.Rule, home))
	switch {
	case v.Unenforced != "":
		s += " denies it, but it happened: " + v.Unenforced
	case v.Allow != "":
		s += "; to allow it: " + printable(tilde(v.Allow, home))
	case v.Locked:
		s += " (not to be allowed)"
	}
	return s
}

// tilde shortens every path in home that s holds to ~/...
func tilde(s, home string) string {
	if home == "" || home == "/" {
		return s
	}
	if s == home {
		return "~"
	}
	return strings.ReplaceAll(s, home+"/", "~/")
}

// printable is s, quoted when it holds a character that is not printable
// (an escape sequence, a newline, a bidirectional override), so a name
// cannot reach the terminal raw.
func printable(s string) string {
	for _, r := range s {
		if r == '\t' || !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.QuoteToGraphic(s)
		}
	}
	return s
}
