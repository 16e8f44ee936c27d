package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// sessionChildArg runs this program as the host of a session
// (sessionChild), from a copy beside cordon-helper, which a session's
// sandbox runs as its helper (launch.SiblingHelper).
const sessionChildArg = "-session-child"

// runSession times commands in a session (launch.Session, as run_command
// and the library's Session run them) against plain bwrap and against
// `cordon run`, interleaved, each timed end to end: from the call (the
// exec of bwrap or cordon, Session's RunCommand) until the result. It
// copies this program beside the built cordon-helper and runs the copy
// (sessionChild) in a fake home. With files > 0 it also times a second
// session in a workspace of that many files (makeWorkspace, perDir a
// directory), interleaved with the others, and prints its increment over
// the session in the empty workspace.
func runSession(n int, cordon, bwrap string, repo bool, files, perDir int) error {
	tmp, err := os.MkdirTemp("", "cordon-bench-session-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, home, ws, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	if repo {
		if err := makeRepo(ws); err != nil {
			return fmt.Errorf("making the workspace a repository: %w", err)
		}
	}
	big := ""
	if files > 0 {
		big = filepath.Join(tmp, "ws-big")
		dirs, err := makeWorkspace(big, files, perDir)
		if err != nil {
			return fmt.Errorf("making the large workspace: %w", err)
		}
		if repo {
			if err := makeRepo(big); err != nil {
				return fmt.Errorf("making the large workspace a repository: %w", err)
			}
		}
		fmt.Printf("large workspace: %d files in %d directories\n", files, dirs)
		// The walk cache trusts a directory only once its ctime is
		// older than the walk by more than 2 s (globscan's racyWindow).
		time.Sleep(2100 * time.Millisecond)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := filepath.Join(filepath.Dir(cordon), "benchstartup-session")
	if err := copyFile(self, child); err != nil {
		return fmt.Errorf("copying the benchmark beside cordon-helper: %w", err)
	}
	defer os.Remove(child)
	cmd := exec.Command(child, sessionChildArg, fmt.Sprint(n), cordon, bwrap, home, ws, big)
	cmd.Dir, cmd.Env = ws, env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}

// copyFile copies the executable src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// sessionChild is the session's host: n rounds (after 5 of warm-up) of
// plain bwrap, `cordon run -- /bin/true` and /bin/true in the session,
// in that order, and /bin/true in a second session in the large
// workspace BIG when it is not empty; then the medians and ratios.
func sessionChild(args []string) error {
	if len(args) != 6 {
		return fmt.Errorf("%s N CORDON BWRAP HOME WS BIG", sessionChildArg)
	}
	var n int
	if _, err := fmt.Sscan(args[0], &n); err != nil {
		return err
	}
	cordon, bwrap, home, ws, big := args[1], args[2], args[3], args[4], args[5]
	sess, run, err := benchSession(home, ws)
	if err != nil {
		return err
	}
	defer sess.Close()
	cases := []struct {
		name string
		run  func() error
	}{
		{"bwrap", func() error {
			return exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true").Run()
		}},
		{"cordon run", func() error { return exec.Command(cordon, "run", "--", "/bin/true").Run() }},
		{"session", run},
	}
	var bigSess *launch.Session
	if big != "" {
		var runBig func() error
		if bigSess, runBig, err = benchSession(home, big); err != nil {
			return err
		}
		defer bigSess.Close()
		cases = append(cases, struct {
			name string
			run  func() error
		}{"session big", runBig})
	}
	times := make([][]time.Duration, len(cases))
	for i := range n + 5 {
		for c, cs := range cases {
			start := time.Now()
			if err := cs.run(); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			if i >= 5 {
				times[c] = append(times[c], time.Since(start))
			}
		}
	}
	med := make([]time.Duration, len(cases))
	for c := range cases {
		slices.Sort(times[c])
		med[c] = times[c][len(times[c])/2]
		fmt.Printf("%-12s median %8.2f ms  (p10 %.2f, p90 %.2f) over %d runs\n", cases[c].name,
			ms(med[c]), ms(times[c][len(times[c])/10]), ms(times[c][len(times[c])*9/10]), n)
	}
	st := sess.Stats()
	fmt.Printf("session commands: %d in the session's sandbox, %d sandboxes started, %d walks spared by the watcher, %d snapshots reused, %d cgroups reused\n", st.Commands, st.Sandboxes, st.WalksSpared, st.SnapshotsReused, st.GroupsReused)
	fmt.Printf("ratio session/bwrap: %.2fx (target <= 1.0x); session/cordon run: %.2fx\n",
		float64(med[2])/float64(med[0]), float64(med[2])/float64(med[1]))
	if bigSess != nil {
		st := bigSess.Stats()
		fmt.Printf("large workspace's session: %d commands in its sandbox, %d sandboxes started, %d walks spared by the watcher\n", st.Commands, st.Sandboxes, st.WalksSpared)
		fmt.Printf("session in the large workspace: %+.2f ms over the empty one (target <= +1 ms), %.2fx\n",
			ms(med[3]-med[2]), float64(med[3])/float64(med[2]))
	}
	return nil
}

// benchSession is a session in workspace ws with cordon run's policy
// there (the default profile, the absent user config of the fake home),
// and the run of /bin/true in it.
func benchSession(home, ws string) (*launch.Session, func() error, error) {
	h := policy.Host{Home: home, Cwd: ws, Getenv: os.LookupEnv}
	p, err := policy.Load(policy.Options{Host: h, Workspace: ws})
	if err != nil {
		return nil, nil, err
	}
	opts := plan.Options{Home: home, Cwd: ws, Getenv: os.LookupEnv, StateDir: h.StateDir()}
	sess := launch.NewSession()
	return sess, func() error {
		res, err := launch.RunCommand(context.Background(), launch.Request{Policy: p, Command: []string{"/bin/true"}, Options: opts,
			Helper: launch.SiblingHelper, Session: sess, Stdio: launch.Stdio{NoUsage: true}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit status %d", res.ExitCode)
		}
		return err
	}, nil
}
