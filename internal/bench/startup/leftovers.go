package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// leftovers is what runs could leave behind on the host: the entries of
// the workspaces and of cordon's state directory (placeholders, lock
// files), the mounts this process sees, and cordon's cgroups. Processes
// are not in it: reapOrphans fails when one outlives its run.
type leftovers struct {
	entries []string
	mounts  int
	groups  []string
}

// snapshotLeftovers reads the entries under dirs (recursively: their
// relative names and types), the number of mounts and the cgroups named
// cordon-* under /sys/fs/cgroup.
func snapshotLeftovers(dirs []string) (leftovers, error) {
	var l leftovers
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			l.entries = append(l.entries, fmt.Sprintf("%s %v", p, e.Type()))
			return nil
		})
		if err != nil {
			return l, fmt.Errorf("listing %s: %w", d, err)
		}
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return l, err
	}
	l.mounts = bytes.Count(data, []byte("\n"))
	// cgroups: a bounded walk of the v2 hierarchy (or v1's pids controller).
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/pids"} {
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			if strings.Count(strings.TrimPrefix(p, root), "/") > 6 {
				return filepath.SkipDir
			}
			if strings.HasPrefix(e.Name(), "cordon-") {
				l.groups = append(l.groups, p)
			}
			return nil
		})
	}
	return l, nil
}

// diff describes what after holds that l did not (and what it lost), in
// lines; none when the runs left the host as they found it.
func (l leftovers) diff(after leftovers) []string {
	var out []string
	for _, e := range after.entries {
		if !slices.Contains(l.entries, e) {
			out = append(out, "left behind: "+e)
		}
	}
	for _, e := range l.entries {
		if !slices.Contains(after.entries, e) {
			out = append(out, "removed: "+e)
		}
	}
	if after.mounts != l.mounts {
		out = append(out, fmt.Sprintf("mounts: %d before, %d after", l.mounts, after.mounts))
	}
	for _, g := range after.groups {
		if !slices.Contains(l.groups, g) {
			out = append(out, "cgroup left behind: "+g)
		}
	}
	return out
}

// printLeftovers prints one line when nothing was left behind, or each
// difference (at most 20).
func printLeftovers(before, after leftovers) {
	d := before.diff(after)
	if len(d) == 0 {
		fmt.Printf("left behind: nothing (%d workspace and state entries, %d mounts, %d cordon cgroups as before)\n", len(after.entries), after.mounts, len(after.groups))
		return
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "left behind: %d differences\n", len(d))
	for _, s := range d[:min(len(d), 20)] {
		fmt.Fprintln(w, "  "+s)
	}
}
