//go:build linux

package monitor

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// testPolicy allows reads below dir, the directory beside it and /dev/null
// (O_PATH anywhere), and writes, creates, removals, links and metadata
// changes only below dir, but nothing to names starting with "secret".
type testPolicy struct{ dir string }

func (p testPolicy) Allow(path string, a Access) bool {
	if strings.HasPrefix(filepath.Base(path), "secret") {
		return false
	}
	in := func(d string) bool { return path == d || strings.HasPrefix(path, d+"/") }
	switch a {
	case AccessPath:
		return true
	case AccessRead:
		return in(p.dir) || in(p.dir+"-outside") || path == "/dev/null"
	}
	return in(p.dir) || a == AccessWrite && path == "/dev/null"
}

func (p testPolicy) AllowMove(from, to string) bool { return true }

// superviseChild runs the supervised calls of TestSupervise in dir (with
// an outside directory beside it), reporting each step's errno, and some
// facts about what they made.
func superviseChild(dir string, say func(string, error)) {
	out := dir + "-outside"
	join := func(n string) string { return filepath.Join(dir, n) }
	open := func(step, p string, flags int, mode uint32) int {
		fd, err := unix.Open(p, flags, mode)
		say(step, err)
		return fd
	}
	unix.Umask(0o027)
	if fd := open("read", join("r.txt"), unix.O_RDONLY|unix.O_CLOEXEC, 0); fd >= 0 {
		b := make([]byte, 8)
		n, _ := unix.Read(fd, b)
		fmt.Printf("content %s\n", b[:n])
		flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		fmt.Printf("cloexec %d\n", flags&unix.FD_CLOEXEC)
		unix.Close(fd)
	}
	if fd := open("read-keep", join("r.txt"), unix.O_RDONLY, 0); fd >= 0 {
		flags, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		fmt.Printf("keep %d\n", flags&unix.FD_CLOEXEC)
		unix.Close(fd)
	}
	open("secret", join("secret.txt"), unix.O_RDONLY, 0)
	open("secret-path", join("secret.txt"), unix.O_PATH, 0)
	open("secret-link", join("to-secret"), unix.O_RDONLY, 0)
	if fd := open("create", join("made.txt"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o666); fd >= 0 {
		var st unix.Stat_t
		_ = unix.Fstat(fd, &st)
		fmt.Printf("mode %o\n", st.Mode&0o777)
		_, err := unix.Write(fd, []byte("w"))
		say("write", err)
		unix.Close(fd)
	}
	open("excl", join("made.txt"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY, 0o600)
	open("create-outside", filepath.Join(out, "x.txt"), unix.O_CREAT|unix.O_WRONLY, 0o600)
	open("write-outside", filepath.Join(out, "o.txt"), unix.O_WRONLY, 0)
	open("nofollow", join("to-r"), unix.O_RDONLY|unix.O_NOFOLLOW, 0)
	open("directory", join("r.txt"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	open("tmpfile", dir, unix.O_TMPFILE|unix.O_RDWR, 0o600)
	open("devnull", "/dev/null", unix.O_WRONLY, 0)
	open("trunc", join("made.txt"), unix.O_WRONLY|unix.O_TRUNC, 0)
	dfd := open("dir", dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	_, err := unix.Openat(dfd, "r.txt", unix.O_RDONLY, 0)
	say("openat-dirfd", err)
	_, err = unix.Openat(dfd, "secret.txt", unix.O_RDONLY, 0)
	say("openat-dirfd-secret", err)
	_, err = unix.Openat2(dfd, "../"+filepath.Base(dir)+"/r.txt", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH})
	say("openat2-beneath", err)
	_, err = unix.Openat2(dfd, "r.txt", &unix.OpenHow{Flags: unix.O_RDONLY})
	say("openat2", err)
	_, err = unix.Openat2(dfd, "/r.txt", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_IN_ROOT})
	say("openat2-in-root", err)
	_, err = unix.Openat2(dfd, join("r.txt"), &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH})
	say("openat2-beneath-abs", err)
	say("chdir", unix.Chdir(join("sub")))
	_, err = unix.Open("../r.txt", unix.O_RDONLY, 0)
	say("relative", err)
	_, err = unix.Open("/dev/stdin", unix.O_RDONLY, 0)
	say("stdin", err)
	if mfd, err := unix.MemfdCreate("m", 0); err == nil {
		_, err = unix.Open("/proc/self/fd/"+fmt.Sprint(mfd), unix.O_RDONLY, 0)
		say("memfd", err)
	}
	say("mkdir", unix.Mkdir(join("d"), 0o777))
	var st unix.Stat_t
	_ = unix.Stat(join("d"), &st)
	fmt.Printf("dirmode %o\n", st.Mode&0o777)
	say("symlink", unix.Symlink("r.txt", join("l")))
	say("link", unix.Link(join("r.txt"), join("hard")))
	say("link-secret", unix.Link(join("secret.txt"), join("hard2")))
	say("rename", unix.Rename(join("hard"), join("hard3")))
	say("rename-secret", unix.Rename(join("secret.txt"), join("plain")))
	say("rename-onto-secret", unix.Rename(join("hard3"), join("secret2.txt")))
	say("unlink", unix.Unlink(join("hard3")))
	say("unlink-secret", unix.Unlink(join("secret.txt")))
	say("rmdir", unix.Rmdir(join("d")))
	say("truncate", unix.Truncate(join("made.txt"), 0))
	say("truncate-outside", unix.Truncate(filepath.Join(out, "o.txt"), 0))
	say("chmod", unix.Chmod(join("r.txt"), 0o640))
	say("chmod-outside", unix.Chmod(filepath.Join(out, "o.txt"), 0o666))
	say("utimes-outside", unix.UtimesNano(filepath.Join(out, "o.txt"), []unix.Timespec{{Sec: 1}, {Sec: 1}}))
	say("utimes", unix.UtimesNano(join("r.txt"), []unix.Timespec{{Sec: 1}, {Sec: 1}}))
	ofd, err := unix.Open(filepath.Join(out, "o.txt"), unix.O_RDONLY, 0)
	say("read-outside", err)
	say("fchmod-outside", unix.Fchmod(ofd, 0o666))
	say("fchown-outside", unix.Fchown(ofd, -1, -1))
	say("setxattr-outside", unix.Setxattr(filepath.Join(out, "o.txt"), "user.x", []byte("1"), 0))
	mfd, _ := unix.Open(join("made.txt"), unix.O_RDONLY, 0)
	say("fchmod", unix.Fchmod(mfd, 0o600))
	say("mkfifo", unix.Mkfifo(join("fifo"), 0o600))
	go func() {
		// The FIFO's writer, once its reader waits in the supervisor.
		w, err := os.OpenFile(join("fifo"), os.O_WRONLY, 0)
		if err == nil {
			_, _ = w.WriteString("f")
			w.Close()
		}
	}()
	if f, err := os.Open(join("fifo")); err == nil {
		b, _ := bufio.NewReader(f).ReadString('\n')
		fmt.Printf("fifo %s\n", b)
		f.Close()
	}
}

// TestSupervise: the supervisor performs each supervised call as the
// kernel would (flags, the caller's umask, O_CLOEXEC as asked, relative
// paths and directory descriptors, openat2's resolve flags, O_TMPFILE, a
// FIFO that waits for its writer, /dev/stdin) and refuses what its policy
// refuses, with EACCES.
func TestSupervise(t *testing.T) {
	requireWatch(t)
	superviseScenario(t)
}

// TestSuperviseSharedUmask: where the serving thread cannot have a
// file-system context of its own (a container's seccomp profile refuses
// unshare), the supervisor still serves, and what it creates still gets
// the modes the caller's umask gives (the scenario's "mode 640" and
// "dirmode 750" under a process umask of 077 that would take the group's
// bits away).
func TestSuperviseSharedUmask(t *testing.T) {
	requireWatch(t)
	unshareFS = func(int) error { return unix.EPERM }
	old := unix.Umask(0o077)
	t.Cleanup(func() { unshareFS = unix.Unshare; unix.Umask(old) })
	superviseScenario(t)
}

// superviseScenario runs superviseChild under a supervisor and checks
// each step's result.
func superviseScenario(t *testing.T) {
	dir, _ := fixture(t)
	out := dir + "-outside"
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	for name, text := range map[string]string{filepath.Join(dir, "secret.txt"): "S", filepath.Join(out, "o.txt"): "o"} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, 0o644); err != nil { // whatever this process's umask
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"to-secret": "secret.txt", "to-r": "r.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	cmd, m, _, mine, out2 := watchedWith(t, "supervise", dir, Options{Supervise: testPolicy{dir}})
	if _, err := mine.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, out2.String())
	}
	m.Stop()
	got := out2.String()
	e := func(n syscall.Errno) string { return fmt.Sprint(int(n)) }
	for _, want := range []string{
		"read 0", "content r", "cloexec 1", "keep 0",
		"secret " + e(unix.EACCES), "secret-path " + e(unix.EACCES), "secret-link " + e(unix.EACCES),
		"create 0", "mode 640", "write 0", "excl " + e(unix.EEXIST),
		"create-outside " + e(unix.EACCES), "write-outside " + e(unix.EACCES),
		"nofollow " + e(unix.ELOOP), "directory " + e(unix.ENOTDIR), "tmpfile 0", "devnull 0", "trunc 0",
		"openat-dirfd 0", "openat-dirfd-secret " + e(unix.EACCES), "openat2-beneath " + e(unix.EXDEV), "openat2 0", "openat2-in-root 0", "openat2-beneath-abs " + e(unix.EXDEV),
		"relative 0", "stdin 0", "memfd 0",
		"mkdir 0", "dirmode 750", "symlink 0", "link 0", "link-secret " + e(unix.EACCES),
		"rename 0", "rename-secret " + e(unix.EACCES), "rename-onto-secret " + e(unix.EACCES),
		"unlink 0", "unlink-secret " + e(unix.EACCES), "rmdir 0",
		"truncate 0", "truncate-outside " + e(unix.EACCES),
		"chmod 0", "chmod-outside " + e(unix.EACCES), "utimes-outside " + e(unix.EACCES), "utimes 0",
		"read-outside 0", "fchmod-outside " + e(unix.EACCES), "fchown-outside " + e(unix.EACCES),
		"setxattr-outside " + e(unix.EACCES), "fchmod 0", "mkfifo 0", "fifo f",
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("want %q:\n%s", want, got)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, "o.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("o.txt outside: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); err != nil {
		t.Errorf("secret.txt went: %v", err)
	}
}

// superviseOpens opens r.txt in dir superviseOpenCount times (on the
// child's filtered thread) and prints how many opens came back as a
// descriptor that is not the file (the standard input's 0, from an answer
// without its descriptor) and how many failed.
func superviseOpens(dir string) {
	wrong, failed := 0, 0
	b := make([]byte, 8)
	for range superviseOpenCount {
		fd, err := unix.Open(filepath.Join(dir, "r.txt"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			failed++
			continue
		}
		if n, _ := unix.Pread(fd, b, 0); fd <= 2 || string(b[:max(n, 0)]) != "r" {
			wrong++
		}
		if fd > 2 {
			unix.Close(fd)
		}
	}
	fmt.Printf("wrong %d\nfailed %d\n", wrong, failed)
}

// superviseOpenCount is how many opens superviseOpens makes.
const superviseOpenCount = 20000

// TestSuperviseSignalled: signals that interrupt the supervisor while it
// hands a descriptor in (Go's own preemption signals, frequent on a busy
// machine) never turn an open into a success without its file. The
// kernel marks the call answered before the caller takes the descriptor
// (SECCOMP_ADDFD_FLAG_SEND); an interrupted ioctl withdraws the
// descriptor but not the answer, and the open returned 0, the caller's
// standard input: a build read an empty file now and then.
func TestSuperviseSignalled(t *testing.T) {
	requireWatch(t)
	dir, _ := fixture(t)
	cmd, m, _, mine, out := watchedWith(t, "supervise-opens", dir, Options{Supervise: testPolicy{dir}})
	// Every thread of this process (the supervisor's among them) gets
	// SIGURG, which the Go runtime takes as a preemption request and
	// otherwise ignores, as fast as it can be sent, until the child ends.
	stop := make(chan struct{})
	var hammer sync.WaitGroup
	hammer.Go(func() {
		pid := os.Getpid()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tasks, _ := os.ReadDir("/proc/self/task")
			for _, task := range tasks {
				if tid, err := strconv.Atoi(task.Name()); err == nil {
					_ = unix.Tgkill(pid, tid, unix.SIGURG)
				}
			}
		}
	})
	if _, err := mine.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	close(stop)
	hammer.Wait()
	m.Stop()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	t.Logf("%d calls: %s", m.Stop().Calls, out.String())
	if got := out.String(); !strings.Contains(got, "wrong 0\n") || !strings.Contains(got, "failed 0\n") {
		t.Errorf("of %d supervised opens under signals:\n%s", superviseOpenCount, got)
	}
}
