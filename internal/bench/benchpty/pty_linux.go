package benchpty

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Run runs argv in dir, with env (nil: this process's), on a new
// pseudo-terminal as its standard streams and controlling terminal, what
// it writes drained, and returns how long it took; on a failure, the
// error holds what it wrote.
func Run(dir string, env, argv []string) (time.Duration, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return 0, err
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		return 0, err
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return 0, err
	}
	out := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			k, err := master.Read(buf)
			all = append(all, buf[:max(k, 0)]...)
			if err != nil {
				out <- all
				return
			}
		}
	}()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = dir, env, slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	start := time.Now()
	err = cmd.Run()
	d := time.Since(start)
	slave.Close()
	if err != nil {
		master.Close()
		return 0, fmt.Errorf("%v: %s", err, <-out)
	}
	return d, nil
}
