package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"golang.org/x/sys/unix"
)

// applyMounts makes the spec's mounts (helperspec.Spec.Mounts) in order,
// each through descriptors: the destination and the source are opened
// without following a symbolic link, the source cloned as a detached
// mount (open_tree), made read-only there, and moved onto the
// destination (move_mount), keeping the flags the sandbox's mount has
// (noexec, atime), which a user namespace may not clear; kernels before
// 5.12 bind through /proc/self/fd and remount (bindRemount). Unlike
// bubblewrap's mounts, none reads the mount table.
func applyMounts(ms []helperspec.Mount, detach []string) error {
	var copies map[[2]uint64]string
	for _, m := range ms {
		if m.Fd != 0 {
			if copies == nil {
				var err error
				if copies, err = listCopies(helperspec.GitConfigDir); err != nil {
					return fmt.Errorf("binding the private copy of %s: %w", m.Dst, err)
				}
			}
			var st unix.Stat_t
			err := unix.Fstat(m.Fd, &st)
			unix.Close(m.Fd)
			if err != nil {
				return fmt.Errorf("binding the private copy of %s: descriptor %d: %w", m.Dst, m.Fd, err)
			}
			src, ok := copies[[2]uint64{st.Dev, st.Ino}]
			if !ok {
				return fmt.Errorf("binding the private copy of %s: not in %s", m.Dst, helperspec.GitConfigDir)
			}
			m.Src, m.Fd = src, 0
		}
		if err := applyMount(m); err != nil {
			return err
		}
	}
	for _, d := range detach {
		if err := unix.Unmount(d, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("detaching %s: %w", d, err)
		}
	}
	return nil
}

// listCopies maps each regular file in dir by device and inode to its
// path.
func listCopies(dir string) (map[[2]uint64]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[[2]uint64]string, len(ents))
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		var st unix.Stat_t
		p := dir + "/" + e.Name()
		if err := unix.Lstat(p, &st); err == nil {
			out[[2]uint64{st.Dev, st.Ino}] = p
		}
	}
	return out, nil
}

func applyMount(m helperspec.Mount) error {
	how := "binding"
	if m.ReadOnly {
		how = "keeping read-only"
	}
	dst, err := openNoFollow(m.Dst)
	if err != nil {
		return fmt.Errorf("%s %s: %w", how, m.Dst, err)
	}
	defer unix.Close(dst)
	src := dst
	if m.Src != "" {
		if src, err = openNoFollow(m.Src); err != nil {
			return fmt.Errorf("%s %s: its source %s: %w", how, m.Dst, m.Src, err)
		}
		defer unix.Close(src)
	}
	if !oldMountAPI.Load() {
		err := moveTree(src, dst, m.ReadOnly)
		if !errors.Is(err, unix.ENOSYS) {
			if err != nil {
				return fmt.Errorf("%s %s: %w", how, m.Dst, err)
			}
			return nil
		}
		oldMountAPI.Store(true)
	}
	return bindRemount(m, how, src, dst)
}

// oldMountAPI says that the kernel lacks open_tree, mount_setattr or
// move_mount (before 5.12): mounts are made with mount(2).
var oldMountAPI atomic.Bool

// moveTree clones the mount tree at src (with its submounts, as a
// recursive bind) as a detached mount, makes its top read-only, nosuid
// and nodev if readOnly and it is not (leaving every other flag as it
// is), and moves it onto dst. No path is looked up again: three system
// calls against a bind's and a remount's two, each through
// /proc/self/fd, and the open of the new mount between them. ENOSYS: the
// kernel has not all three.
func moveTree(src, dst int, readOnly bool) error {
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(tree)
	// A clone has its source mount's flags: one read-only already (a
	// placeholder's) needs no change, which spares a system call for
	// each of a repository's missing protected files.
	if readOnly && !hasFlags(tree, unix.ST_RDONLY|unix.ST_NOSUID|unix.ST_NODEV) {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// hasFlags reports whether the mount of fd has every statfs flag of want.
func hasFlags(fd int, want uint64) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(fd, &st) == nil && uint64(st.Flags)&want == want
}

// bindRemount makes m as kernels before 5.12 allow: src bound onto dst
// through /proc/self/fd, then the new mount, opened again, remounted
// read-only with the flags statfs reports of it, which a user namespace
// may not clear.
func bindRemount(m helperspec.Mount, how string, src, dst int) error {
	if err := unix.Mount(fdPath(src), fdPath(dst), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("%s %s: mount: %w", how, m.Dst, err)
	}
	if !m.ReadOnly {
		return nil
	}
	// The descriptor above is the directory under the new mount: open the
	// new mount itself.
	top, err := openNoFollow(m.Dst)
	if err != nil {
		return fmt.Errorf("%s %s: %w", how, m.Dst, err)
	}
	defer unix.Close(top)
	var st unix.Statfs_t
	if err := unix.Fstatfs(top, &st); err != nil {
		return fmt.Errorf("%s %s: statfs: %w", how, m.Dst, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOEXEC, unix.MS_NOEXEC}, {unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", fdPath(top), "", flags, ""); err != nil {
		return fmt.Errorf("%s %s: remount: %w", how, m.Dst, err)
	}
	return nil
}

// openNoFollow opens path as a place (O_PATH), refusing a symbolic link
// at its end.
func openNoFollow(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, errors.New("it is a symbolic link")
	}
	return fd, nil
}

func fdPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// userStage is stage two of the helper: this helper started again, in a
// user namespace of its own that maps the user back onto this helper's
// uid and gid (0, the unprivileged user's own in the sandbox), to do all
// the rest (capabilities, Landlock, seccomp, readiness, exec), so the
// command runs as its user, in a namespace that does not own the
// sandbox's mounts, as under bubblewrap alone. A Go program cannot
// unshare its user namespace once threaded; a child cloned into a new one
// can. It is started before the mounts (startAsUser) and reads its spec
// from a pipe that run writes only once they are all made: nothing of it
// but the Go runtime's start runs before then. The runtime reads the
// whole mount table as it starts (to find a CPU cgroup), which with a
// mount per protected path of 200 repositories cost it 6 to 8 ms after
// the mounts, and nothing before them; its start also overlaps them.
type userStage struct {
	cmd  *exec.Cmd
	spec *os.File // the write end of stage two's spec
}

// startAsUser starts stage two for user, with the status socket and the
// command's stderr if the spec passes them; it waits for its spec.
func startAsUser(user helperspec.User, status *os.File, stderr bool) (*userStage, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("passing the spec on: %w", err)
	}
	defer specR.Close()
	cmd := exec.Command("/proc/self/exe", os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Env = []string{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = make([]*os.File, helperspec.FdStderr-2)
	cmd.ExtraFiles[helperspec.FdSpec-3] = specR
	if status != nil {
		cmd.ExtraFiles[helperspec.FdStatus-3] = status
	}
	if stderr {
		cmd.ExtraFiles[helperspec.FdStderr-3] = os.NewFile(helperspec.FdStderr, "stderr")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  unix.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: user.UID, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: user.GID, HostID: os.Getgid(), Size: 1}},
		// The launcher signals the command's process group, as it does
		// the helper's that became the command.
		Setpgid: true,
		// Kept through exec, so that stage two may empty the bounding
		// set as it gives up every capability (dropCapabilities).
		AmbientCaps: []uintptr{unix.CAP_SETPCAP},
	}
	// Signals sent to this process alone are not the command's: a
	// handler (reset in the child) keeps them from ending it.
	signal.Notify(make(chan os.Signal, 1), unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT)
	if err := cmd.Start(); err != nil {
		specW.Close()
		return nil, fmt.Errorf("starting the command's user namespace: %w", err)
	}
	return &userStage{cmd: cmd, spec: specW}, nil
}

// abort ends stage two before it has its spec (the mounts failed): it
// reports nothing, this helper does.
func (u *userStage) abort() {
	if u == nil {
		return
	}
	_ = u.cmd.Process.Kill()
	u.spec.Close()
	_ = u.cmd.Wait()
}

// run hands stage two its spec (spec, its mounts made, Mounts and User
// cleared), then gives up its capabilities and stays as the command's
// parent, in another process group, ending with its exit status (128
// plus the signal that killed it) for bubblewrap to pass on.
func (u *userStage) run(spec helperspec.Spec) (int, error) {
	spec.Mounts, spec.User, spec.Detach = nil, nil, nil
	data, err := json.Marshal(spec)
	if err == nil {
		_, err = u.spec.Write(data)
	}
	if cerr := u.spec.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		u.abort()
		return 125, fmt.Errorf("passing the spec on: %w", err)
	}
	// Hold nothing of the command's: its end of the status socket, its
	// stderr and output close when it does.
	if null := devNull(); null >= 0 {
		for _, fd := range []int{0, 1, 2, helperspec.FdStatus, helperspec.FdStderr} {
			_ = unix.Dup2(null, fd)
		}
		unix.Close(null)
	}
	dropAllThreads()
	err = u.cmd.Wait()
	ws, ok := u.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Exited():
		return ws.ExitStatus(), nil
	case ok && ws.Signaled():
		return 128 + int(ws.Signal()), nil
	}
	return 125, err
}

// devNull returns a descriptor of /dev/null, or -1.
func devNull() int {
	fd, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// dropAllThreads clears the capabilities of every thread of this process
// (capabilities are per thread), once the command's user namespace is
// made: the waiting helper needs none. Without the means (a host built
// with cgo) the threads keep CAP_SYS_ADMIN in the sandbox's namespace,
// out of the command's reach (another user namespace, Landlock's and
// seccomp's scope).
func dropAllThreads() {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	_, _, _ = syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
}
