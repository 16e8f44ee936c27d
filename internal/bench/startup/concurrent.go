package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
)

// runConcurrent times n runs at once of `cordon run -- /bin/true` (default
// profile, spread over the given number of workspaces) against n runs at
// once of plain bwrap, in rounds that alternate the two, and prints the
// runs per second of each (n divided by the time from the first start to
// the last end; medians of the rounds) and their ratio. It also measures
// the CPU time of each run (getrusage of this process's children, which it
// reaps as a child subreaper), one at a time before the rounds and at once
// in them, and prints the machine's limit: its cores divided by the CPU
// time of one run. Every run must succeed, and the host must hold after
// the rounds what it held before them (printLeftovers). The target compares cordon's runs per second with the
// lower of that limit and plain bwrap's. cordon is built when not given.
func runConcurrent(n, rounds, workspaces int, cordon, bwrap string) error {
	if n <= 0 || rounds <= 0 || workspaces <= 0 {
		return fmt.Errorf("-concurrent %d with -rounds %d and -workspaces %d: give positive numbers", n, rounds, workspaces)
	}
	if err := becomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	tmp, err := os.MkdirTemp("", "cordon-bench-concurrent-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, _, ws, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	dirs := []string{ws}
	for i := 1; i < workspaces; i++ {
		d := filepath.Join(tmp, fmt.Sprintf("ws%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		dirs = append(dirs, d)
	}
	cases := []struct {
		name string
		argv []string
	}{
		{"plain bwrap", []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}},
		{"cordon run", []string{cordon, "run", "--", "/bin/true"}},
	}
	// CPU time of one run, alone (the warm-up of the walk cache first).
	alone := make([]time.Duration, len(cases))
	const aloneRuns = 20
	for c, cs := range cases {
		for i := -1; i < aloneRuns; i++ {
			c0 := childrenCPU()
			if _, err := atOnce(1, cs.argv, dirs[max(i, 0)%len(dirs):][:1], env); err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			if err := reapOrphans(); err != nil {
				return err
			}
			if i >= 0 {
				alone[c] += childrenCPU() - c0
			}
		}
		alone[c] /= aloneRuns
	}
	// What the runs leave: compared after the rounds (the state directory
	// holds lock files while runs are in a workspace). A first run in each
	// workspace makes what cordon keeps for it (its walk cache, sandbox
	// cache and check lock), as TestManyRunsAtOnce does.
	for _, d := range dirs {
		if _, err := atOnce(1, cases[1].argv, []string{d}, env); err != nil {
			return fmt.Errorf("a first run in %s: %w", d, err)
		}
	}
	if err := reapOrphans(); err != nil {
		return err
	}
	watched := append(slices.Clone(dirs), filepath.Join(tmp, "home", ".state", "cordon", "locks"))
	before, err := snapshotLeftovers(watched)
	if err != nil {
		return err
	}
	rates := make([][]float64, len(cases))
	cpus := make([][]time.Duration, len(cases))
	for r := -1; r < rounds; r++ { // round -1 warms up
		for c, cs := range cases {
			c0 := childrenCPU()
			d, err := atOnce(n, cs.argv, dirs, env)
			if err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			if err := reapOrphans(); err != nil {
				return err
			}
			cpu := (childrenCPU() - c0) / time.Duration(n)
			if r >= 0 {
				rates[c] = append(rates[c], float64(n)/d.Seconds())
				cpus[c] = append(cpus[c], cpu)
				fmt.Printf("round %d: %d x %-11s at once: %7.0f ms, %6.1f runs/s, CPU %5.2f ms per run\n", r+1, n, cs.name, ms(d), rates[c][r], ms(cpu))
			}
		}
	}
	after, err := snapshotLeftovers(watched)
	if err != nil {
		return err
	}
	printLeftovers(before, after)
	med := make([]float64, len(cases))
	for c, cs := range cases {
		slices.Sort(rates[c])
		med[c] = rates[c][len(rates[c])/2]
		fmt.Printf("%-11s %d at once in %d workspace(s): median %6.1f runs/s (min %.1f, max %.1f) over %d rounds; CPU per run %.2f ms at once (median), %.2f ms alone\n",
			cs.name, n, len(dirs), med[c], rates[c][0], rates[c][len(rates[c])-1], rounds, ms(median(cpus[c])), ms(alone[c]))
	}
	cores := runtime.NumCPU()
	limit := float64(cores) / alone[1].Seconds()
	fmt.Printf("ratio cordon/plain bwrap, runs per second at %d at once: %.2fx (%.2fx the time per run)\n", n, med[1]/med[0], med[0]/med[1])
	fmt.Printf("the CPU limit: %d cores / %.2f ms per cordon run alone = %.1f runs/s; cordon reaches %.2fx of it\n", cores, ms(alone[1]), limit, med[1]/limit)
	fmt.Printf("cordon against the lower of the CPU limit and plain bwrap (%.1f runs/s): %.2fx (target >= 0.8x)\n", min(limit, med[0]), med[1]/min(limit, med[0]))
	return nil
}

// atOnce starts n copies of argv at once, spread over the directories
// dirs, and returns the time from the first start to the last end; any
// failure is an error.
func atOnce(n int, argv []string, dirs []string, env []string) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = dirs[i%len(dirs)]
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("%v: %s", err, out)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	close(errs)
	if err, ok := <-errs; ok {
		return 0, fmt.Errorf("%d of %d runs failed; the first: %w", len(errs)+1, n, err)
	}
	return d, nil
}
