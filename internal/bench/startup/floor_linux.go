package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// floorChildArg runs the benchmark as the child of runFloor that makes
// the mounts, in a user and mount namespace of its own.
const floorChildArg = "__floor_mounts"

// runFloor measures the kernel's part of what a run in n nested
// repositories cannot avoid in this design, with the system calls cordon
// makes, and nothing of cordon's own: the placeholders of each
// repository's missing config.worktree and commondir, made on the host
// (a hard link each to one file, as the launcher makes them) and removed
// again, and the five mounts the helper makes in each repository (the
// .git directory pinned, the config's private copy bound over it, the
// two placeholders and the hooks directory read-only), each an open of
// the destination, open_tree, mount_setattr where the clone is not
// read-only yet, and move_mount, in a user and mount namespace as the
// helper's. Rounds alternate the three; the medians are printed, for n
// repositories and for one.
func runFloor(n, rounds int) error {
	if n <= 0 || rounds <= 0 {
		return errors.New("-floor: give a positive count of repositories and -n rounds")
	}
	tmp, err := os.MkdirTemp("", "cordon-bench-floor-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ws := filepath.Join(tmp, "ws")
	for r := range n {
		if err := gitInit(filepath.Join(ws, fmt.Sprintf("r%04d", r))); err != nil {
			return err
		}
	}
	// The placeholders' sources and the config's copy, as the launcher
	// keeps them outside the workspace.
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"empty-file", "commondir", "config-copy"} {
		if err := os.WriteFile(filepath.Join(src, f), nil, 0o644); err != nil {
			return err
		}
	}
	var made, removed, mounted []time.Duration
	for i := 0; i < rounds+1; i++ {
		t := time.Now()
		if err := floorPlaceholders(ws, src, n, true); err != nil {
			return err
		}
		d1 := time.Since(t)
		cmd := exec.Command("/proc/self/exe", floorChildArg, ws, src, strconv.Itoa(n))
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("the mounts in a user namespace: %v: %s", err, out)
		}
		d2, err := time.ParseDuration(strings.TrimSpace(string(out)))
		if err != nil {
			return fmt.Errorf("the mounts' child said %q", out)
		}
		t = time.Now()
		if err := floorPlaceholders(ws, src, n, false); err != nil {
			return err
		}
		d3 := time.Since(t)
		if i > 0 { // warm-up
			made, mounted, removed = append(made, d1), append(mounted, d2), append(removed, d3)
		}
	}
	total := median(made) + median(mounted) + median(removed)
	fmt.Printf("the kernel's floor of %d nested repositories (medians of %d rounds; nothing of cordon's own):\n", n, rounds)
	for _, r := range []struct {
		what string
		d    time.Duration
		per  int
	}{
		{"placeholders made (2 a repository, hard links)", median(made), 2 * n},
		{"helper mounts (5 a repository)", median(mounted), 5 * n},
		{"placeholders removed", median(removed), 2 * n},
	} {
		fmt.Printf("  %-48s %8.2f ms = %6.1f µs each of %d\n", r.what, ms(r.d), float64(r.d.Microseconds())/float64(r.per), r.per)
	}
	fmt.Printf("  %-48s %8.2f ms = %6.1f µs a repository\n", "together", ms(total), float64(total.Microseconds())/float64(n))
	return nil
}

// floorPlaceholders makes (or, with create false, removes) the two
// placeholders of each of n repositories in ws: config.worktree linked to
// src/empty-file, commondir to src/commondir.
func floorPlaceholders(ws, src string, n int, create bool) error {
	for r := range n {
		g := filepath.Join(ws, fmt.Sprintf("r%04d", r), ".git")
		for name, from := range map[string]string{"config.worktree": "empty-file", "commondir": "commondir"} {
			var err error
			if create {
				err = os.Link(filepath.Join(src, from), filepath.Join(g, name))
			} else {
				err = os.Remove(filepath.Join(g, name))
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// floorChild makes, in its own mount namespace, the helper's five mounts
// in each of the repositories of args (ws, src, n) and prints how long
// they took. The workspace is bound onto itself first, as bwrap binds it.
func floorChild(args []string) error {
	if len(args) != 3 {
		return errors.New("want WORKSPACE SOURCES COUNT")
	}
	ws, src := args[0], args[1]
	n, err := strconv.Atoi(args[2])
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	if err := unix.Mount(ws, ws, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding the workspace: %w", err)
	}
	// The placeholders' sources are read-only, as the helper finds them.
	for _, f := range []string{"empty-file", "commondir"} {
		if err := floorBind(filepath.Join(src, f), filepath.Join(src, f), true); err != nil {
			return err
		}
	}
	start := time.Now()
	for r := range n {
		g := filepath.Join(ws, fmt.Sprintf("r%04d", r), ".git")
		for _, m := range []struct {
			src, dst string
			ro       bool
		}{
			{g, g, false},
			{filepath.Join(src, "config-copy"), filepath.Join(g, "config"), false},
			{filepath.Join(src, "empty-file"), filepath.Join(g, "config.worktree"), true},
			{filepath.Join(src, "commondir"), filepath.Join(g, "commondir"), true},
			{filepath.Join(g, "hooks"), filepath.Join(g, "hooks"), true},
		} {
			if err := floorBind(m.src, m.dst, m.ro); err != nil {
				return err
			}
		}
	}
	fmt.Println(time.Since(start))
	return nil
}

// floorBind is the helper's mount (internal/helper's moveTree): the
// destination and the source opened without following a link, the
// source cloned, made read-only if ro and it is not, and moved onto the
// destination.
func floorBind(src, dst string, ro bool) error {
	d, err := unix.Open(dst, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dst, err)
	}
	defer unix.Close(d)
	s := d
	if src != dst {
		if s, err = unix.Open(src, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		defer unix.Close(s)
	}
	tree, err := unix.OpenTree(s, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(tree)
	var st unix.Statfs_t
	want := int64(unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV)
	if ro && (unix.Fstatfs(tree, &st) != nil || st.Flags&want != want) {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
			return fmt.Errorf("mount_setattr %s: %w", src, err)
		}
	}
	if err := unix.MoveMount(tree, "", d, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount onto %s: %w", dst, err)
	}
	return nil
}
