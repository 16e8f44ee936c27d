package helper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestApplyMountsRefuses: a mount the helper cannot make safely fails,
// naming its path, before any mount system call: a destination or a
// source that is a symbolic link (it would be followed) or is missing.
func TestApplyMountsRefuses(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "hooks")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		m    helperspec.Mount
		want string
	}{
		{"link destination", helperspec.Mount{Dst: link, ReadOnly: true}, "keeping read-only " + link + ": it is a symbolic link"},
		{"missing destination", helperspec.Mount{Dst: filepath.Join(dir, "gone")}, "binding " + filepath.Join(dir, "gone") + ": no such file"},
		{"link source", helperspec.Mount{Src: link, Dst: real, ReadOnly: true}, "its source " + link + ": it is a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := applyMounts([]helperspec.Mount{tc.m}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("applyMounts(%+v) = %v, want an error with %q", tc.m, err, tc.want)
			}
		})
	}
}

// mountsTestEnv makes the test binary, re-executed, apply mounts in a
// mount namespace of its own (see TestApplyMountsKeeps).
const mountsTestEnv = "CORDON_HELPER_MOUNTS_TEST"

// TestApplyMountsKeeps applies, in a user and mount namespace of the test's
// own, a directory kept read-only (with files bound in it before and
// after: the one after lands on the new mount), a file bound read-only
// over another (from a writable mount, from a read-only one, and from a
// read-only one that allows setuid and devices) and a directory bound
// writable, all on a tmpfs mounted noexec and
// noatime, with open_tree and move_mount and with mount(2) (the path of
// kernels before 5.12): both make the same mounts, read-only where asked,
// nosuid and nodev, keeping noexec and noatime, the source's content
// visible at the destination, and a directory's submounts kept.
func TestApplyMountsKeeps(t *testing.T) {
	for _, api := range []string{"new", "old"} {
		t.Run(api, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestApplyMountsKeeps$")
			cmd.Env = append(os.Environ(), mountsTestEnv+"="+api)
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
				UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
				GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
			}
			out, err := cmd.CombinedOutput()
			if err != nil && cmd.ProcessState == nil {
				testenv.SkipOrFail(t, "cannot start a user namespace: %v", err)
			}
			if err != nil || !strings.Contains(string(out), "mounts: ok") {
				t.Fatalf("applying mounts in a namespace (%v):\n%s", err, out)
			}
			if api == "new" && strings.Contains(string(out), "fell back") {
				testenv.SkipOrFail(t, "the kernel lacks open_tree, mount_setattr or move_mount (Linux 5.12)")
			}
		})
	}
}

func TestMain(m *testing.M) {
	if i := slices.Index(os.Args, userStageArg); i >= 0 && i+2 < len(os.Args) {
		os.Exit(userStageChild(os.Args[i+1], os.Args[i+2]))
	}
	if api := os.Getenv(mountsTestEnv); api != "" {
		if err := mountsChild(api == "old"); err != nil {
			fmt.Println("mounts:", err)
			os.Exit(1)
		}
		if api == "new" && oldMountAPI.Load() {
			fmt.Println("mounts: ok, fell back to mount(2)")
		} else {
			fmt.Println("mounts: ok")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// mountsChild is TestApplyMountsKeeps's work in its namespaces.
func mountsChild(old bool) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	dir, err := os.MkdirTemp("", "cordon-mounts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOEXEC|unix.MS_NOATIME, ""); err != nil {
		return fmt.Errorf("mounting a tmpfs: %w", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	for _, f := range []struct{ path, data string }{
		{"kept/hook", "#!/bin/sh\n"}, {"kept/a", "original\n"}, {"kept/b", "original\n"},
		{"src", "copy\n"}, {"dst", "original\n"}, {"rw/file", ""},
	} {
		p := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(f.data), 0o644); err != nil {
			return err
		}
	}
	// A mount below the kept directory: a recursive bind keeps it.
	if err := os.Mkdir(filepath.Join(dir, "kept", "sub"), 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", filepath.Join(dir, "kept", "sub"), "tmpfs", 0, ""); err != nil {
		return fmt.Errorf("mounting below kept: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kept", "sub", "marker"), nil, 0o644); err != nil {
		return err
	}
	// Sources on read-only mounts: one nosuid and nodev (the sandbox's
	// placeholders), one not.
	for _, r := range []struct {
		name  string
		flags uintptr
	}{{"ro-full", unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV}, {"ro-only", unix.MS_RDONLY}} {
		d := filepath.Join(dir, r.name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "file"), []byte("copy\n"), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, r.name+"-dst"), []byte("original\n"), 0o644); err != nil {
			return err
		}
		if err := unix.Mount(d, d, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s: %w", r.name, err)
		}
		if err := unix.Mount("", d, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_NOEXEC|unix.MS_NOATIME|r.flags, ""); err != nil {
			return fmt.Errorf("remounting %s: %w", r.name, err)
		}
	}
	oldMountAPI.Store(old)
	// kept/a makes kept's descriptor known before kept is mounted on:
	// kept/b must be mounted on the new mount, not below it.
	if err := applyMounts([]helperspec.Mount{
		{Src: filepath.Join(dir, "src"), Dst: filepath.Join(dir, "kept", "a"), ReadOnly: true},
		{Dst: filepath.Join(dir, "kept"), ReadOnly: true},
		{Src: filepath.Join(dir, "src"), Dst: filepath.Join(dir, "kept", "b"), ReadOnly: true},
		{Src: filepath.Join(dir, "src"), Dst: filepath.Join(dir, "dst"), ReadOnly: true},
		{Dst: filepath.Join(dir, "rw")},
		{Src: filepath.Join(dir, "ro-full", "file"), Dst: filepath.Join(dir, "ro-full-dst"), ReadOnly: true},
		{Src: filepath.Join(dir, "ro-only", "file"), Dst: filepath.Join(dir, "ro-only-dst"), ReadOnly: true},
	}, nil); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kept", "new"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("a file made in the kept directory: %v, want EROFS", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dst"), nil, 0o644); !errors.Is(err, unix.EROFS) {
		return fmt.Errorf("the bound file written: %v, want EROFS", err)
	}
	for _, f := range []string{"dst", "kept/a", "kept/b", "ro-full-dst", "ro-only-dst"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(b) != "copy\n" {
			return fmt.Errorf("the file bound on %s reads %q (%v), want the source's", f, b, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "rw", "file"), []byte("x"), 0o644); err != nil {
		return fmt.Errorf("the writable bind: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept", "sub", "marker")); err != nil {
		return fmt.Errorf("the kept directory's submount: %w", err)
	}
	for _, c := range []struct {
		path string
		want uint64
		not  uint64
	}{
		{"kept", unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME, 0},
		{"dst", unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME, 0},
		{"rw", unix.ST_NOEXEC | unix.ST_NOATIME, unix.ST_RDONLY},
		{"ro-full-dst", unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME, 0},
		{"ro-only-dst", unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME, 0},
	} {
		var st unix.Statfs_t
		if err := unix.Statfs(filepath.Join(dir, c.path), &st); err != nil {
			return err
		}
		if f := uint64(st.Flags); f&c.want != c.want || f&c.not != 0 {
			return fmt.Errorf("%s is mounted with flags %#x, want %#x and not %#x", c.path, f, c.want, c.not)
		}
	}
	return nil
}

// userStageArg makes the test binary, re-executed, play the helper's
// first stage (TestUserStage), and its own re-execution, with the same
// arguments and its spec on a pipe, the second.
const userStageArg = "cordon-userstage-test"

// TestUserStage: stage two of the helper, started before the mounts,
// runs nothing of its own until its spec comes once they are made; it
// gets that spec without the mounts and the user, runs as the user it
// maps back, and its exit status is the helper's; aborted (the mounts
// failed), it is killed having done nothing.
func TestUserStage(t *testing.T) {
	for _, mode := range []string{"run", "abort"} {
		t.Run(mode, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "ran")
			cmd := exec.Command(os.Args[0], "-test.run=^TestUserStage$", userStageArg, mode, marker)
			out, err := cmd.CombinedOutput()
			if err != nil && strings.Contains(string(out), "operation not permitted") {
				testenv.SkipOrFail(t, "cannot start a user namespace: %s", out)
			}
			got, rerr := os.ReadFile(marker)
			switch mode {
			case "run":
				if err != nil {
					t.Fatalf("stage one: %v\n%s", err, out)
				}
				if want := fmt.Sprintf("uid %d env K=V mounts 0 user false", os.Getuid()); rerr != nil || string(got) != want {
					t.Errorf("stage two wrote %q (%v), want %q\n%s", got, rerr, want, out)
				}
			case "abort":
				if err != nil || !strings.Contains(string(out), "aborted") {
					t.Fatalf("stage one: %v\n%s", err, out)
				}
				if rerr == nil {
					t.Errorf("stage two ran after abort: %q", got)
				}
			}
		})
	}
}

// userStageChild is TestUserStage's stage one, or, with its spec on a
// pipe, stage two.
func userStageChild(mode, marker string) int {
	var st unix.Stat_t
	if unix.Fstat(helperspec.FdSpec, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		spec, err := helperspec.Decode(os.NewFile(helperspec.FdSpec, "spec"))
		if err != nil {
			return 3
		}
		msg := fmt.Sprintf("uid %d env %s mounts %d user %v", os.Getuid(), strings.Join(spec.Env, ","), len(spec.Mounts), spec.User != nil)
		if err := os.WriteFile(marker, []byte(msg), 0o644); err != nil {
			return 4
		}
		return 0
	}
	stage, err := startAsUser(helperspec.User{UID: os.Getuid(), GID: os.Getgid()}, nil, false)
	if err != nil {
		fmt.Println("starting stage two:", err)
		return 1
	}
	// The mounts take their time: stage two waits for its spec.
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		fmt.Println("stage two ran before its spec")
		return 1
	}
	if mode == "abort" {
		stage.abort()
		if _, err := os.Stat(marker); err == nil {
			fmt.Println("stage two ran after abort")
			return 1
		}
		fmt.Println("aborted")
		return 0
	}
	code, err := stage.run(helperspec.Spec{Version: helperspec.Version, Env: []string{"K=V"},
		Mounts: []helperspec.Mount{{Dst: "/nowhere"}}, User: &helperspec.User{UID: 1, GID: 1}})
	if err != nil {
		return 125
	}
	return code
}
