package helper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/enforce/landlock"
	"github.com/cordon-sandbox/cordon/internal/enforce/seccomp"
	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

// Main runs the helper with the arguments that follow the hidden
// subcommand ("--" then the command) and returns an exit status if it
// could not exec. It never returns after a successful exec.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	// The status socket is absent when a library host wrapped an
	// exec.Cmd itself (sandbox.Wrap): then errors go to stderr. Until the
	// spec says (Spec.Status), a socket at FdStatus is taken for it; a
	// file there is not (this process's Go runtime may have opened one).
	var status *os.File
	var st unix.Stat_t
	if err := unix.Fstat(helperspec.FdStatus, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
		status = os.NewFile(helperspec.FdStatus, "status")
	}
	fail := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		if status != nil {
			_, _ = status.Write(helperspec.ExecFailedMessage(code, msg))
		} else {
			fmt.Fprintln(os.Stderr, "cordon: "+msg)
		}
		return code
	}
	if len(args) == 0 {
		return fail(125, "helper: no command")
	}
	spec, err := readSpec()
	var ve *helperspec.VersionError
	if errors.As(err, &ve) {
		return fail(125, "%v", err)
	}
	if err != nil {
		return fail(125, "helper: %v", err)
	}
	if !spec.Status {
		status = nil
	}
	// The protected paths' mounts, with the capability bubblewrap kept
	// for them (see helperspec.Spec.Mounts); then, where an unprivileged
	// user's sandbox needs one, the command's own user namespace, whose
	// stage of this helper starts meanwhile and gets its spec once the
	// mounts are made (userStage).
	var stage *userStage
	if spec.User != nil {
		if stage, err = startAsUser(*spec.User, status, spec.Stderr); err != nil {
			return fail(125, "helper: %v", err)
		}
	}
	if err := applyMounts(spec.Mounts, spec.Detach); err != nil {
		stage.abort()
		return fail(125, "helper: %v: the protected paths cannot be kept read-only, so the command did not run", err)
	}
	if stage != nil {
		code, err := stage.run(spec)
		if err != nil {
			return fail(code, "helper: %v", err)
		}
		return code
	}
	// Capabilities are per thread: this goroutine stays on its thread until
	// exec, so the exec happens from the thread that dropped them.
	runtime.LockOSThread()
	// This thread tries the command's candidates on PATH: the violation
	// monitor names what it was denied by this name, not "3" (the
	// helper runs as /proc/self/fd/3).
	name := []byte(helperspec.HelperBinary + "\x00")
	_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0)
	if err := dropCapabilities(); err != nil {
		return fail(125, "helper: %v", err)
	}
	// The command's environment is the spec's, never the helper's own
	// (the launcher gives it an empty one): so is the PATH it is looked
	// up in.
	env := withPWD(dedupEnv(spec.Env))
	paths, err := lookPaths(args[0], env)
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return fail(127, "%s: command not found inside the sandbox (is its directory readable? see cordon policy)", args[0])
		}
		return fail(126, "%s: %v", args[0], unwrapPath(err))
	}
	if spec.Stderr {
		if err := unix.Dup2(helperspec.FdStderr, 2); err == nil {
			_ = unix.Close(helperspec.FdStderr)
		}
	}
	if err := closeStray(); err != nil {
		return fail(125, "helper: %v", err)
	}
	takeForeground()
	if spec.Net != nil && len(spec.Net.Listeners) > 0 {
		// Before Landlock and seccomp: the listeners are the host's, the
		// command only connects to them.
		if status == nil {
			return fail(125, "helper: the network proxy and forwarded ports need the launcher's status socket to hand their listeners over: run the command with Sandbox.Run, not Wrap")
		}
		if err := sendListeners(spec.Net); err != nil {
			return fail(125, "helper: %v", err)
		}
	}
	for _, f := range spec.Files {
		if err := writeNew(f); err != nil {
			return fail(125, "helper: %v", err)
		}
	}
	var notes, terminals []string
	if spec.Landlock != nil {
		rep, err := landlock.Apply(*spec.Landlock)
		if err != nil {
			return fail(125, "helper: applying Landlock rules: %v", err)
		}
		notes, terminals = rep.Degraded, rep.Terminals
	}
	if spec.Seccomp != nil {
		// Last before exec: the filter also forbids what the helper did
		// above (no mount, no new user namespace after this).
		if err := seccomp.Install(*spec.Seccomp); err != nil {
			return fail(125, "helper: installing the seccomp filter: %v", err)
		}
	}
	if spec.Supervise && status == nil {
		notes = append(notes, helperspec.Unsupervised)
	} else if spec.Supervise {
		// Last of all, as the watch filter below: without the
		// supervisor, Landlock alone would let the command reach what
		// the plan counts on it to refuse.
		if err := handOverWatch(status, seccomp.InstallSupervise, terminals); err != nil {
			return fail(125, "helper: the Landlock-only backend's supervisor could not start: %v; run where bubblewrap works (see cordon status)", err)
		}
	} else if spec.Watch {
		// Last of all: the helper's own calls above stay unwatched, and
		// the filters before decide every watched call first.
		if err := handOverWatch(status, seccomp.InstallWatch, nil); err != nil {
			notes = append(notes, helperspec.WatchUnavailable+": "+err.Error()+"; what the command is denied is not reported")
		}
	} else if (spec.Ask || spec.Renames || spec.TreeChanges) && status != nil {
		// Last of all, as the watch filter, and one filter for all
		// three: the opens a person may be asked about, the renames onto
		// a config's copy, the creating calls the host counts (with the
		// renames). Under --ask with the count, every open and every
		// creating call (seccomp.AskTreeCalls).
		// Without it (cordon inside a watched cordon: EBUSY) the host
		// gets no listener, and the check after the run walks every
		// writable tree: nothing is lost to the count but time, and
		// nothing is said unless the opens or the renames were asked for.
		install := seccomp.InstallRenames
		switch {
		case spec.Ask && spec.TreeChanges:
			install = func() (int, error) { return seccomp.InstallCalls(seccomp.AskTreeCalls()) }
		case spec.Ask && spec.Renames:
			install = func() (int, error) { return seccomp.InstallCalls(append(seccomp.Opened(), seccomp.Renamed()...)) }
		case spec.Ask:
			install = func() (int, error) { return seccomp.InstallCalls(seccomp.Opened()) }
		case spec.TreeChanges:
			install = seccomp.InstallTree
		}
		var lost []string
		if spec.Ask {
			lost = append(lost, "nothing is asked about files: what the policy refuses is refused")
		}
		if spec.Renames {
			lost = append(lost, "git cannot write a repository's config (its copy)")
		}
		if err := handOverWatch(status, install, nil); err != nil && len(lost) > 0 {
			notes = append(notes, helperspec.WatchUnavailable+": "+err.Error()+"; "+strings.Join(lost, "; "))
		}
	}
	if status == nil {
		for _, n := range notes {
			fmt.Fprintln(os.Stderr, "cordon: degraded: "+n)
		}
	}
	if status != nil {
		cred := unix.UnixCredentials(&unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())})
		if err := unix.Sendmsg(helperspec.FdStatus, helperspec.ReadyMessage(notes), cred, nil, 0); err != nil {
			return fail(125, "helper: reporting readiness: %v", err)
		}
		if spec.WaitGo {
			if err := waitGo(helperspec.FdStatus); err != nil {
				return fail(125, "helper: the host did not release the sandbox: %v", err)
			}
		}
	}
	// The resource limits come last, just before exec: they are the
	// command's, and the helper's own Go runtime, which allocates while it
	// applies Landlock and seccomp, could fail under a small memory limit
	// (RLIMIT_DATA of --max-memory 64).
	for _, r := range spec.Rlimits {
		lim := unix.Rlimit{Cur: r.Value, Max: r.Value}
		if err := unix.Setrlimit(r.Resource, &lim); err != nil {
			return fail(125, "helper: setting %s to %d: %v", r.Name, r.Value, err)
		}
	}
	// As execvp does: a candidate that may not be executed (EACCES, e.g. a
	// directory on PATH the sandbox cannot read) passes on to the next.
	for _, path := range paths {
		if err = unix.Exec(path, args, env); !errors.Is(err, syscall.EACCES) {
			break
		}
	}
	code := 126
	if errors.Is(err, syscall.ENOENT) {
		code = 127
	}
	return fail(code, "%s: %v", args[0], err)
}

// handOverWatch installs the violation monitor's or the supervisor's
// filter (install) on this thread (the one that execs the command) and
// hands its listener to the host, with the command's terminals.
func handOverWatch(status *os.File, install func() (int, error), terminals []string) error {
	if status == nil {
		return errors.New("it needs the launcher's status socket (run the command with Sandbox.Run, not Wrap)")
	}
	fd, err := install()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendmsg(helperspec.FdStatus, helperspec.WatchMessage(terminals), unix.UnixRights(fd), nil, 0); err != nil {
		return fmt.Errorf("handing its listener to the host: %w", err)
	}
	return nil
}

// takeForeground makes the command the foreground process group of its
// terminal when that group is invisible here. With a terminal, the launcher
// gives the sandbox a private pty whose foreground group is bwrap's, which
// lies outside the sandbox's pid namespace: the kernel reports it as 0, and
// a job-control shell (sh -i) then fails to restore it when it exits. The
// command gets its own process group, visible inside, which also lets the
// launcher signal the whole group.
func takeForeground() {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	if err != nil || pgrp != 0 {
		return // not our controlling terminal, or its group is visible
	}
	if err := unix.Setpgid(0, 0); err != nil {
		return
	}
	// A background group may set the foreground group only while it
	// blocks SIGTTOU; the mask is per thread, so stay on this one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[0] = 1 << (uint(unix.SIGTTOU) - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
		return
	}
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
}

// lookPath finds the command as a shell would with the environment env:
// a name without a slash in env's PATH (none: not found), with
// exec.LookPath's rules. The helper's own PATH is set to env's for the
// look-up; nothing else of env enters the helper's environment (GODEBUG,
// say, would change the Go runtime's behaviour in the helper).
func lookPath(name string, env []string) (string, error) {
	paths, err := lookPaths(name, env)
	if err != nil {
		return "", err
	}
	return paths[0], nil
}

// lookPaths is lookPath returning every executable candidate in PATH
// order (one for a name with a slash), for execvp's retry on EACCES.
func lookPaths(name string, env []string) ([]string, error) {
	first, err := lookPathFirst(name, env)
	if err != nil || strings.Contains(name, "/") {
		return []string{first}, err
	}
	out := []string{first}
	path, _ := lookupEnv(env, "PATH")
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if p == first || slices.Contains(out, p) {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

// lookPathFirst is exec.LookPath in env's PATH.
func lookPathFirst(name string, env []string) (string, error) {
	if v, ok := lookupEnv(env, "PATH"); ok {
		if err := os.Setenv("PATH", v); err != nil {
			return "", fmt.Errorf("setting PATH: %w", err)
		}
	} else if err := os.Unsetenv("PATH"); err != nil {
		return "", fmt.Errorf("unsetting PATH: %w", err)
	}
	return exec.LookPath(name)
}

// withPWD adds PWD, the working directory, to env when it has none, as
// bwrap does for its child and a shell for its commands (make's $(PWD),
// for one, reads it from the environment).
func withPWD(env []string) []string {
	if _, ok := lookupEnv(env, "PWD"); ok {
		return env
	}
	if wd, err := os.Getwd(); err == nil {
		return append(env, "PWD="+wd)
	}
	return env
}

// lookupEnv returns the value of name in env.
func lookupEnv(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// dedupEnv keeps the last entry of each name, as os/exec does for a
// Cmd's Env (a library host's cmd.Env may name a variable twice), in the
// order of those last entries; entries without "=" are kept as they are,
// empty ones dropped.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case kv == "":
			continue
		case ok && seen[name]:
			continue
		case ok:
			seen[name] = true
		}
		out = append(out, kv)
	}
	slices.Reverse(out)
	return out
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	return err
}

// waitGo reads the host's release (helperspec.MsgGo, Spec.WaitGo) from fd
// with a raw system call: while it blocks, the Go runtime is not told, so
// it starts no thread to run other goroutines in this one's place. The
// host sets the sandbox's process limit meanwhile, and a thread the limit
// refused would end the runtime (see launch's limitProcesses).
func waitGo(fd int) error {
	var b [1]byte
	for {
		n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return errno
		case n != 1:
			return errors.New("the status socket was closed")
		case b[0] != helperspec.MsgGo:
			return fmt.Errorf("unexpected message %#x", b[0])
		}
		return nil
	}
}

// readSpec reads the Spec from helperspec.FdSpec and closes it.
func readSpec() (helperspec.Spec, error) {
	f := os.NewFile(helperspec.FdSpec, "spec")
	if f == nil {
		return helperspec.Spec{}, errors.New("no spec descriptor")
	}
	defer f.Close()
	return helperspec.Decode(f)
}

// closeStray marks every descriptor above stderr close-on-exec, so the
// command inherits only stdin, stdout and stderr. The status socket stays
// open until exec, so its closing tells the host that exec happened.
func closeStray() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing descriptors: %w", err)
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		unix.CloseOnExec(fd)
	}
	return nil
}

// writeNew creates f, read-only, where nothing is yet (no link followed).
func writeNew(f helperspec.File) error {
	fd, err := unix.Open(f.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("creating %s: %w", f.Path, err)
	}
	file := os.NewFile(uintptr(fd), f.Path)
	_, werr := file.Write(f.Data)
	if cerr := file.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", f.Path, werr)
	}
	return nil
}
