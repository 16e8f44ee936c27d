package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// runCPU measures the CPU time of one `cordon run -- /bin/true` (default
// profile, in an empty git repository under a fake home in a directory of
// dir): user and system time of cordon and of everything it starts (bwrap,
// cordon-helper, the command), read with getrusage(RUSAGE_CHILDREN) around
// each run. That counts only the processes someone waited for: bwrap's
// process inside the sandbox, which reaps the command, is left by the
// bwrap that started it, so this process becomes a child subreaper and
// reaps such orphans after each run (cordon does the same). With a
// baseline binary the two alternate, run for run, and the ratio of their
// medians and means is printed. The parts no run can avoid in this design
// are timed in the same rounds: bare /bin/true, plain bwrap, an empty Go
// program, `cordon version` (the start of the cordon binary), bwrap with
// cordon's mounts running /bin/true, and the start of cordon-helper; their
// sum is the floor of the design's CPU time per run. With files > 0 the
// runs of cordon (and of the baseline) are also timed in a workspace of
// that many files (perDir a directory, as -files makes it), with the walk
// cache of the runs before: the CPU a large workspace adds to a run,
// which a loaded machine inflates less than the wall time.
func runCPU(n int, cordon, bwrap, baseline, dir string, files, perDir int) error {
	if dir == "" {
		return fmt.Errorf("-cpu needs -dir, a directory not under /tmp for the fake home and the workspace (as a real home is: the sandbox's /tmp is its own)")
	}
	if err := becomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "cordon-bench-cpu-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, home, ws, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		return fmt.Errorf("git init: %v: %s", err, out)
	}
	emptyGo, err := buildEmptyGo(tmp)
	if err != nil {
		return err
	}
	mounts, err := cordonMounts(tmp, home, env)
	if err != nil {
		return err
	}
	type cpuCase struct {
		name string
		argv []string
		exit int    // the exit status it ends with (the helper outside a sandbox: 125)
		dir  string // where it runs ("": the empty workspace)
		env  []string
	}
	// The baseline keeps its own state directory (withState).
	benv := withState(env, filepath.Join(home, ".state-baseline"))
	cases := []cpuCase{
		{"cordon run", []string{cordon, "run", "--", "/bin/true"}, 0, "", nil},
	}
	if baseline != "" {
		cases = append(cases, cpuCase{"baseline run", []string{baseline, "run", "--", "/bin/true"}, 0, "", benv})
	}
	if files > 0 {
		big := filepath.Join(tmp, "ws-big")
		dirs, err := makeWorkspace(big, files, perDir)
		if err != nil {
			return fmt.Errorf("making the large workspace: %w", err)
		}
		fmt.Printf("large workspace: %d files in %d directories\n", files, dirs)
		// The walk cache trusts a directory only once its ctime is
		// older than the walk by more than 2 s.
		time.Sleep(2100 * time.Millisecond)
		cases = append(cases, cpuCase{"cordon large", []string{cordon, "run", "--", "/bin/true"}, 0, big, nil})
		if baseline != "" {
			cases = append(cases, cpuCase{"baseline large", []string{baseline, "run", "--", "/bin/true"}, 0, big, benv})
		}
	}
	cases = append(cases,
		cpuCase{"/bin/true", []string{"/bin/true"}, 0, "", nil},
		cpuCase{"plain bwrap", []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}, 0, "", nil},
		cpuCase{"empty Go", []string{emptyGo}, 0, "", nil},
		cpuCase{"cordon version", []string{cordon, "version"}, 0, "", nil},
		cpuCase{"bwrap+mounts", mounts, 0, "", nil},
		cpuCase{"helper start", []string{filepath.Join(filepath.Dir(cordon), "cordon-helper")}, 125, "", nil},
	)
	if baseline != "" {
		cases = append(cases, cpuCase{"baseline version", []string{baseline, "version"}, 0, "", nil})
	}
	cpu := make([][]time.Duration, len(cases))
	wall := make([][]time.Duration, len(cases))
	for i := 0; i < n+5; i++ {
		for c, cs := range cases {
			cmd := exec.Command(cs.argv[0], cs.argv[1:]...)
			cmd.Dir, cmd.Env = ws, env
			if cs.env != nil {
				cmd.Env = cs.env
			}
			if cs.dir != "" {
				cmd.Dir = cs.dir
			}
			before := childrenCPU()
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if err := reapOrphans(); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			used := childrenCPU() - before
			if code := cmd.ProcessState.ExitCode(); code != cs.exit {
				return fmt.Errorf("%s: exit status %d (%v): %s", cs.name, code, err, out)
			}
			if i >= 5 { // warm-up
				cpu[c] = append(cpu[c], used)
				wall[c] = append(wall[c], d)
			}
		}
	}
	med := make([]time.Duration, len(cases))
	mean := make([]time.Duration, len(cases))
	at := map[string]int{}
	for c, cs := range cases {
		at[cs.name] = c
		med[c], mean[c] = median(cpu[c]), average(cpu[c])
		fmt.Printf("%-16s CPU median %6.2f ms, mean %6.2f ms (p10 %.2f, p90 %.2f); wall median %6.2f ms; over %d runs\n",
			cs.name, ms(med[c]), ms(mean[c]), ms(cpu[c][len(cpu[c])/10]), ms(cpu[c][len(cpu[c])*9/10]), ms(median(wall[c])), n)
	}
	run, bw := at["cordon run"], at["plain bwrap"]
	fmt.Printf("CPU per run, cordon run / plain bwrap: %.2fx (median)\n", float64(med[run])/float64(med[bw]))
	if baseline != "" {
		b := at["baseline run"]
		fmt.Printf("CPU per run, this build / the baseline: %.2fx median, %.2fx mean (target <= 0.5x); cordon version %.2fx\n",
			float64(med[run])/float64(med[b]), float64(mean[run])/float64(mean[b]), float64(med[at["cordon version"]])/float64(med[at["baseline version"]]))
	}
	if l, ok := at["cordon large"]; ok {
		fmt.Printf("CPU added by the workspace of %d files: %+.2f ms (median)", files, ms(med[l]-med[run]))
		if bl, ok := at["baseline large"]; ok {
			b := at["baseline run"]
			fmt.Printf("; the baseline's %+.2f ms (%.2fx)", ms(med[bl]-med[b]), float64(med[l]-med[run])/float64(med[bl]-med[b]))
		}
		fmt.Println()
	}
	// Each part counts its own exec: the floor is what a run costs if
	// cordon, bwrap and the helper did nothing but start.
	floor := med[at["cordon version"]] + med[at["bwrap+mounts"]] + med[at["helper start"]]
	fmt.Printf("floor of the design's CPU per run: cordon version %.2f + bwrap with cordon's mounts running /bin/true %.2f + the helper's start %.2f = %.2f ms (cordon run is %.2f ms over it; an empty Go program costs %.2f ms, /bin/true %.2f ms)\n",
		ms(med[at["cordon version"]]), ms(med[at["bwrap+mounts"]]), ms(med[at["helper start"]]), ms(floor), ms(med[run]-floor), ms(med[at["empty Go"]]), ms(med[at["/bin/true"]]))
	return nil
}

// median sorts ds and returns its middle element.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func average(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
