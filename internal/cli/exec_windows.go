package cli

import (
	"errors"
	"os"
	"os/exec"
)

// execProgram runs path with argv and this process's standard streams and
// environment, then exits with its exit code: Windows cannot replace a
// running process. It returns only with an error.
func execProgram(path string, argv []string) error {
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	os.Exit(cmd.ProcessState.ExitCode())
	return nil
}
