package launch

import (
	"errors"
	"github.com/cordon-sandbox/cordon/backend"
	"os"
	"os/exec"

	"github.com/cordon-sandbox/cordon/internal/plan"
	"golang.org/x/sys/unix"
)

// Wrap rewrites cmd so that its Start runs pl: the first half of Run's
// start step (the workspace lock and placeholders, the private /tmp, the
// helper's binary and spec), without the cgroup, the status socket, the
// terminal or the check for planted files, since the caller starts and
// waits for cmd itself. cmd.Env, when not nil, is the command's
// environment instead of the plan's (as Request.Env); cmd.Env becomes
// plan.LauncherEnv. Stdin, Stdout, Stderr and SysProcAttr are kept
// (Pdeathsig is set). release, to call once cmd has finished, closes the
// descriptors, releases the lock (removing placeholders when no other
// sandbox uses the workspace) and removes the private /tmp.
func Wrap(pl *plan.Plan, cmd *exec.Cmd) (release func(), err error) {
	if pl.Backend != backend.Bwrap && pl.Backend != backend.Landlock {
		return nil, errors.New("launch: Wrap needs a bwrap or Landlock-only plan")
	}
	if n := pl.Net; n != nil && n.DNS && len(n.ForwardPorts) == 0 {
		// Nothing serves the denied network's name server: a lookup
		// inside fails at once (nothing listens on 127.0.0.1:53), only
		// the host is not named after the run.
		c := *pl
		c.Net, c.Spec.Net = nil, nil
		pl = &c
	}
	if pl.Spec.Net != nil || pl.Net.Filtered() || pl.Net != nil && len(pl.Net.ForwardPorts) > 0 {
		return nil, errors.New("launch: Wrap cannot serve the network proxy or forwarded ports (the caller starts and waits for the command itself): run the command with Run, or use the loopback network without forwarded ports")
	}
	pl = pl.WithoutGitCopies()
	setEnv(pl, cmd.Env)
	r := &sandboxRun{pl: pl}
	if err := r.prepareDirs(); err != nil {
		r.closeAfterWait()
		return nil, err
	}
	if r.placeholders != nil {
		// The caller starts bwrap as soon as Wrap returns: the
		// placeholders, made meanwhile (prepareDirs), must be there.
		if err := r.placeholders(); err != nil {
			r.closeAfterWait()
			return nil, err
		}
	}
	// The command's real stderr, when it is a file; otherwise the
	// helper's stderr, which exec.Cmd copies into cmd.Stderr, is the
	// command's. There is no status socket: the caller waits itself.
	var stderr *os.File
	if f, ok := cmd.Stderr.(*os.File); ok {
		stderr = f
	}
	exe, specR, err := r.helperSpec(false, stderr != nil)
	if err != nil {
		r.closeAfterWait()
		return nil, err
	}
	cmd.Env = plan.LauncherEnv()
	cmd.Path = pl.Argv[0]
	cmd.Args = pl.Argv
	// exec.Command's look-up of the name in the host's PATH no longer
	// matters: the helper looks it up inside, in the command's PATH.
	cmd.Err = nil
	cmd.Dir = launchDir(pl)
	cmd.ExtraFiles = []*os.File{exe, specR, nil, stderr}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &unix.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
	return r.closeAfterWait, nil
}
