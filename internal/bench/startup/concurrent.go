package main

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// runConcurrent times n runs at once of `cordon run -- /bin/true` (default
// profile, in one workspace) against n runs at once of plain bwrap, in
// rounds that alternate the two, and prints the runs per second of each
// (n divided by the time from the first start to the last end; medians of
// the rounds) and their ratio. cordon is built when not given.
func runConcurrent(n, rounds int, cordon, bwrap string) error {
	if n <= 0 || rounds <= 0 {
		return fmt.Errorf("-concurrent %d with -rounds %d: give positive numbers", n, rounds)
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
	cases := []struct {
		name string
		argv []string
	}{
		{"plain bwrap", []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}},
		{"cordon run", []string{cordon, "run", "--", "/bin/true"}},
	}
	rates := make([][]float64, len(cases))
	for r := -1; r < rounds; r++ { // round -1 warms up
		for c, cs := range cases {
			d, err := atOnce(n, cs.argv, ws, env)
			if err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			if r >= 0 {
				rates[c] = append(rates[c], float64(n)/d.Seconds())
				fmt.Printf("round %d: %d x %-11s at once: %7.0f ms, %6.1f runs/s\n", r+1, n, cs.name, ms(d), rates[c][r])
			}
		}
	}
	med := make([]float64, len(cases))
	for c, cs := range cases {
		slices.Sort(rates[c])
		med[c] = rates[c][len(rates[c])/2]
		fmt.Printf("%-11s %d at once: median %6.1f runs/s (min %.1f, max %.1f) over %d rounds\n", cs.name, n, med[c], rates[c][0], rates[c][len(rates[c])-1], rounds)
	}
	fmt.Printf("ratio cordon/plain bwrap, runs per second at %d at once: %.2fx (%.2fx the time per run)\n", n, med[1]/med[0], med[0]/med[1])
	return nil
}

// atOnce starts n copies of argv at once in dir and returns the time from
// the first start to the last end; any failure is an error.
func atOnce(n int, argv []string, dir string, env []string) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Go(func() {
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = dir
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
