package limits

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Reuse readies the group, once every process in it is gone, for another
// run of the same limits: its process limit is lifted until the next
// SetMaxProcesses (that run's set-up starts inside it, as in a new group)
// and its peak memory is reset (the page cache the last run left charged
// to it reclaimed first), so that the next run's usage, counted
// from the Usage read at this run's end (Usage.Since), is its own. It
// reports false, changing nothing the next run relies on, when the group
// is not empty or its peak cannot be reset (cgroup v2 before Linux 6.12,
// where memory.peak takes no write): such a group is closed, and the next
// run gets one of its own.
func (g *Group) Reuse() bool {
	if g.closed {
		return false
	}
	var pids, mem string
	switch g.kind {
	case KindCgroup1:
		pids, mem = g.dirs["pids"], g.dirs["memory"]
	case KindCgroup2:
		pids, mem = g.dir, g.dir
	default:
		return false
	}
	// Without a pids controller the group's emptiness cannot be read.
	if pids == "" || readUintOpt(pids, "pids.current") != 0 || !exists(filepath.Join(pids, "pids.current")) {
		return false
	}
	if mem != "" {
		// The page cache the last run left charged to the group would
		// count against the next run's limit and peak: past
		// reclaimFrom, it is reclaimed first, as far as the kernel can
		// (below it the reclaim costs more than it gives: 0.8 ms of CPU
		// on cgroup v1 for a run that left a few hundred KiB).
		if g.kind == KindCgroup1 {
			if readUintOpt(mem, "memory.usage_in_bytes") > reclaimFrom {
				_ = writeFile(filepath.Join(mem, "memory.force_empty"), "0")
			}
		} else if cur := readUintOpt(mem, "memory.current"); cur > reclaimFrom {
			_ = writeFile(filepath.Join(mem, "memory.reclaim"), strconv.FormatUint(cur, 10))
		}
		if g.resetPeak(mem) != nil {
			return false
		}
	}
	if err := writeFile(filepath.Join(pids, "pids.max"), "max"); err != nil {
		return false
	}
	g.limits.MaxProcesses = 0
	return true
}

// resetPeak resets the group's peak memory use: on v1 by writing 0 to
// memory.max_usage_in_bytes; on v2 by a write to memory.peak, which
// counts only for reads through the same descriptor, so the group keeps
// it open and Usage reads the peak through it.
func (g *Group) resetPeak(dir string) error {
	if g.kind == KindCgroup1 {
		return writeFile(filepath.Join(dir, "memory.max_usage_in_bytes"), "0")
	}
	if g.peak == nil {
		f, err := os.OpenFile(filepath.Join(dir, "memory.peak"), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		g.peak = f
	}
	_, err := g.peak.WriteAt([]byte("reset\n"), 0)
	return err
}

// reclaimFrom is the memory charged to an empty group past which Reuse
// reclaims it.
const reclaimFrom = 16 << 20

// peakBytes reads memory.peak through the descriptor resetPeak reset.
func (g *Group) peakBytes(u *Usage) uint64 {
	b := make([]byte, 32)
	n, err := g.peak.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		u.Missing = append(u.Missing, "memory.peak")
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b[:n])), 10, 64)
	if err != nil {
		u.Missing = append(u.Missing, "memory.peak")
		return 0
	}
	return v
}
