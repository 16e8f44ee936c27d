package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// runRepos times `cordon run -- /bin/true` in workspaces holding each
// count of nested repositories (a `git init` each, in the workspace,
// itself one), interleaved run for run, on the Landlock-only backend too,
// and with the baseline binary if one is given, and prints each median against the workspace without
// nested repositories and how the cost grows: the increment of the
// largest count over the empty workspace against that of the count
// nearest 200 (linear growth gives the ratio of the counts). Each median
// comes with the median CPU time of the run (cordon and what it waited
// for: bwrap, the helper, the command), which a loaded machine inflates
// less than the wall time.
//
// With gostart each binary also runs a shell that starts an empty Go
// program goStarts times (a copy in each workspace), interleaved with the
// others, and the difference of the two medians gives the time of one
// start inside: every Go program reads the sandbox's mount table up to
// its CPU cgroup as it starts (see limits.CPUView).
func runRepos(n int, cordon, baseline, counts string, gostart bool) error {
	var ns []int
	for _, f := range strings.Split(counts, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return fmt.Errorf("-repos: %q is not a count of repositories", f)
		}
		ns = append(ns, c)
	}
	if !slices.Contains(ns, 0) {
		ns = append([]int{0}, ns...)
	}
	tmp, err := os.MkdirTemp("", "cordon-bench-repos-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, home, _, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	// The cases: this build; this build on the Landlock-only backend,
	// which makes no mounts (the part of the growth that is not theirs:
	// the walk, the guard's snapshot and check); the baseline.
	type repoCase struct {
		name string
		argv []string
		env  []string
	}
	cases := []repoCase{{"this build", []string{cordon, "run", "--", "/bin/true"}, env},
		{"this build, --backend landlock", []string{cordon, "run", "--backend", "landlock", "--", "/bin/true"}, env}}
	if baseline != "" {
		cases = append(cases, repoCase{"baseline " + baseline, []string{baseline, "run", "--", "/bin/true"}, withState(env, filepath.Join(home, ".state-baseline"))})
	}
	var emptyGo string
	if gostart {
		if emptyGo, err = buildEmptyGo(tmp); err != nil {
			return err
		}
		loop := fmt.Sprintf("i=0; while [ $i -lt %d ]; do ./emptygo; i=$((i+1)); done", goStarts)
		for _, c := range cases[:len(cases):len(cases)] {
			argv := append(slices.Clone(c.argv[:len(c.argv)-1]), "/bin/sh", "-c", loop)
			cases = append(cases, repoCase{c.name + ", " + strconv.Itoa(goStarts) + " Go starts", argv, c.env})
		}
	}
	bins := cases
	wss := make([]string, len(ns))
	for i, c := range ns {
		ws := filepath.Join(tmp, fmt.Sprintf("ws-%d", c))
		if err := gitInit(ws); err != nil {
			return err
		}
		for r := range c {
			if err := gitInit(filepath.Join(ws, fmt.Sprintf("r%04d", r))); err != nil {
				return err
			}
		}
		if emptyGo != "" {
			if err := copyFile(emptyGo, filepath.Join(ws, "emptygo")); err != nil {
				return err
			}
		}
		wss[i] = ws
	}
	times := make([][][]time.Duration, len(bins))
	cpus := make([][][]time.Duration, len(bins))
	for b := range bins {
		times[b] = make([][]time.Duration, len(ns))
		cpus[b] = make([][]time.Duration, len(ns))
	}
	// failed[b][w] says why a binary could not run in a workspace (the
	// baseline's bwrap refuses more than 9,000 arguments): it is not
	// timed there again.
	failed := make([][]string, len(bins))
	for b := range bins {
		failed[b] = make([]string, len(ns))
	}
	for i := 0; i < n+2; i++ {
		for w := range ns {
			for b, c := range cases {
				if failed[b][w] != "" {
					continue
				}
				cmd := exec.Command(c.argv[0], c.argv[1:]...)
				cmd.Dir, cmd.Env = wss[w], c.env
				start := time.Now()
				out, err := cmd.CombinedOutput()
				d := time.Since(start)
				if err != nil && b == 0 {
					return fmt.Errorf("%s in %d repositories: %v: %s", c.name, ns[w], err, out)
				}
				if err != nil {
					failed[b][w] = strings.TrimSpace(string(out))
					continue
				}
				if i >= 2 { // warm-up
					times[b][w] = append(times[b][w], d)
					cpus[b][w] = append(cpus[b][w], cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
				}
			}
		}
	}
	ref := slices.Index(ns, 200)
	if ref < 0 {
		ref = len(ns) - 1
	}
	for b, c := range cases {
		name := c.name
		med, cpu := make([]time.Duration, len(ns)), make([]time.Duration, len(ns))
		for w := range ns {
			if failed[b][w] != "" {
				continue
			}
			slices.Sort(times[b][w])
			slices.Sort(cpus[b][w])
			med[w] = times[b][w][len(times[b][w])/2]
			cpu[w] = cpus[b][w][len(cpus[b][w])/2]
		}
		fmt.Printf("%s:\n", name)
		for w, c := range ns {
			if failed[b][w] != "" {
				fmt.Printf("  %5d nested repositories: failed: %s\n", c, failed[b][w])
				continue
			}
			fmt.Printf("  %5d nested repositories: median %9.2f ms (p10 %.2f, p90 %.2f) = %6.2fx the empty workspace; CPU %8.2f ms = %6.2fx\n", c,
				ms(med[w]), ms(times[b][w][len(times[b][w])/10]), ms(times[b][w][len(times[b][w])*9/10]), float64(med[w])/float64(med[0]),
				ms(cpu[w]), float64(cpu[w])/float64(cpu[0]))
		}
		last := len(ns) - 1
		if last != ref && med[ref] > med[0] && med[last] > 0 {
			fmt.Printf("  growth: %d repositories add %.2f ms, %d add %.2f ms: %.2fx (linear: %.2fx)\n", ns[ref], ms(med[ref]-med[0]),
				ns[last], ms(med[last]-med[0]), float64(med[last]-med[0])/float64(med[ref]-med[0]), float64(ns[last])/float64(ns[ref]))
		}
	}
	if gostart {
		// The first half of cases run /bin/true, the second the same
		// binaries starting Go programs.
		half := len(cases) / 2
		for b := range half {
			for w, c := range ns {
				if failed[b][w] != "" || failed[b+half][w] != "" {
					continue
				}
				one := (median(times[b+half][w]) - median(times[b][w])) / goStarts
				fmt.Printf("%s, %d nested repositories: one Go program's start inside %.2f ms\n", cases[b].name, c, ms(one))
			}
		}
		cases = cases[:half]
	}
	if baseline != "" {
		last := len(cases) - 1
		for w, c := range ns {
			if failed[last][w] != "" {
				continue
			}
			a, b := times[0][w][len(times[0][w])/2], times[last][w][len(times[last][w])/2]
			ca, cb := cpus[0][w][len(cpus[0][w])/2], cpus[last][w][len(cpus[last][w])/2]
			fmt.Printf("this build against the baseline, %d nested repositories: %.2fx, CPU %.2fx\n", c, float64(a)/float64(b), float64(ca)/float64(cb))
		}
	}
	return nil
}

// goStarts is how many times a run of -gostart starts the empty Go program.
const goStarts = 100

// gitInit makes dir a new git repository.
func gitInit(dir string) error {
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %v: %s", dir, err, out)
	}
	return nil
}
