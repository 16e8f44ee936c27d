package cli

import (
	"runtime"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/host/probe"
)

// enforcedElsewhere is what cordon enforces on macOS (the Seatbelt
// backend) and Windows (the Job Object), where the Linux rows (namespaces,
// seccomp, Landlock) mean nothing; ok is false when it is not one of them.
func enforcedElsewhere(r *probe.Report) ([]enforcement, bool) {
	switch {
	case r.AutoBackend == backend.Seatbelt:
		return enforcedSeatbelt(), true
	case r.AutoBackend == backend.Job:
		return enforcedJob(), true
	case r.OS != "linux":
		return []enforcement{{"sandbox", "unavailable", "no OS sandbox on " + r.OS + " (see the remedies above): cordon run refuses unless --mode off", nil}}, true
	}
	return nil, false
}

// enforcedSeatbelt is what the Seatbelt profile and the macOS launcher
// enforce (see plan/seatbelt.go and launch/seatbelt_darwin.go).
func enforcedSeatbelt() []enforcement {
	return []enforcement{
		{"files", "enforced", "Seatbelt profile, everything denied by default: reads of the macOS system directories and the policy's read and write paths; writes only to the write paths and the run's own TMPDIR; denied paths and globs unreadable and unwritable; protected paths (every git directory's config and hooks at any depth, editor, agent and shell config) read-only, and their ancestors (.git) cannot be renamed aside",
			[]string{"a repository cannot be created inside the workspace (git init, git clone): .git is read-only at any depth"}},
		{"git outside the workspace", "enforced", "a sub-directory, linked worktree or submodule checkout gets its repository's work tree (read-only) and git directory (writable, config and hooks read-only)", nil},
		{"processes", "partial", "the command's own process group, killed whole on timeout, interrupt and exit; signals and process information only within the sandbox",
			[]string{"no pid namespace: a process that leaves the process group (setsid) outlives the run"}},
		{"network", "partial", "deny: no network rule; open: the host's network; filtered (--allow-net, --deny-net, the ci profile): cordon's HTTP and SOCKS5 proxy on the host's 127.0.0.1, with a per-run token, decides each connection, and the profile allows connecting only to its two ports and the --forward-port ports (no other address or port, no listening, no name resolution); loopback (--net loopback): listen on the host's loopback and connect to the --forward-port ports; unix sockets only by exact path",
			[]string{"loopback: there is no private loopback; what the command listens on is on the host's loopback, where other local users and programs can connect", "filtered: no GIT_SSH_COMMAND (no cordon helper on macOS for ssh's ProxyCommand): git over ssh is refused, git over https goes through the proxy"}},
		{"resource limits", "not enforced", "no cordon helper runs on macOS: --max-procs, --max-memory and --max-cpu are not enforced, and each one set is said as degraded at run time; the timeout is enforced", nil},
		{"seccomp, landlock, namespaces", "unavailable", "Linux only", nil},
		{"audit log", "enforced", "cordon mcp records every refused file operation, cordon run every access the profile denied when the violation monitor is on (audit.log_file, --audit-log)", nil},
		{"violation monitor", "available", "on request (cordon test, on_violation: warn or log, --audit-log): the denials the kernel logs for the run's profile, read from log stream by the run's tag; audit.log_allowed, --mode permissive and cordon learn are refused (the log holds no allowed access)", nil},
	}
}

// enforcedJob is what the Windows Job Object backend enforces (see
// plan/job.go and launch/job_windows.go).
func enforcedJob() []enforcement {
	return []enforcement{
		{"files", "not enforced", backend.JobWarning, nil},
		{"network", "not enforced", backend.JobWarning, nil},
		{"processes", "enforced", "a Job Object per run: the whole tree is killed when the run ends, times out or cordon dies (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE)", nil},
		{"resource limits", "enforced", "active processes, job memory and job user CPU time (the Job's limits)", []string{"no file size limit on Windows"}},
		{"environment", "enforced", "an allowlist (sandbox.env, --env) plus the variables Windows needs to start programs", nil},
		{"MCP file tools", "enforced", "cordon mcp's file tools reach only the workspace and the policy's roots, by handle; denied and protected paths are refused, without case; links and junctions are not followed", nil},
		{"audit log", "enforced", "cordon mcp records every refused file operation (audit.log_file, --audit-log)", nil},
		{"violation monitor", "not built", "not on " + runtime.GOOS + ": on_violation warn or log, audit.log_allowed, --mode permissive, cordon test and cordon learn exit 125", nil},
	}
}
