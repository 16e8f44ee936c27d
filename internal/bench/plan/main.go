// Command benchplan measures the plan time of cordon (loading the policy,
// the one walk of the workspace for deny globs and protected paths, and
// building the bwrap plan) in an empty workspace and in a generated
// workspace of 100,000 files with 50 nested git repositories, against the
// plan time of an earlier cordon (by default the release before protected
// paths were found at any depth), in one run, interleaved, and prints the
// ratios. It measures two ways: in process, with a small program built
// against each tree (through a build overlay, so neither tree is written)
// that times policy.Load and plan.Build alone; and as a whole command,
// `cordon policy --explain -- true` minus `cordon version`, which also
// prints the policy and the plan (a plan that protects more prints more).
// Run it from the repository root with:
//
//	go run ./internal/bench/plan [-n 30] [-baseline aecf6f6]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 30, "runs of each command in each workspace")
	baseline := flag.String("baseline", "aecf6f6", "git revision of the cordon to compare with")
	files := flag.Int("files", 100000, "files in the large workspace")
	repos := flag.Int("repos", 50, "nested git repositories in the large workspace")
	flag.Parse()
	if err := run(*n, *baseline, *files, *repos); err != nil {
		fmt.Fprintln(os.Stderr, "benchplan:", err)
		os.Exit(1)
	}
}

func run(n int, baseline string, files, repos int) error {
	// Not under /tmp: a sandboxed run hides the host's /tmp.
	base, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(base, "cordon-benchplan-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	newBin := filepath.Join(tmp, "new", "cordon")
	oldBin := filepath.Join(tmp, "old", "cordon")
	if err := build(".", newBin); err != nil {
		return err
	}
	src := filepath.Join(tmp, "baseline-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	arch := exec.Command("sh", "-c", "git archive --format=tar \"$1\" | tar -x -C \"$2\"", "sh", baseline, src)
	arch.Stderr = os.Stderr
	if err := arch.Run(); err != nil {
		return fmt.Errorf("extracting %s: %w", baseline, err)
	}
	if err := build(src, oldBin); err != nil {
		return err
	}
	newTimer := filepath.Join(tmp, "timeplan-new")
	oldTimer := filepath.Join(tmp, "timeplan-old")
	if err := buildTimer(tmp, ".", newTimer); err != nil {
		return err
	}
	if err := buildTimer(tmp, src, oldTimer); err != nil {
		return err
	}

	home := filepath.Join(tmp, "home")
	empty := filepath.Join(home, "empty")
	large := filepath.Join(home, "large")
	for _, d := range []string{empty, large} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	fmt.Printf("generating %d files and %d nested repositories ...\n", files, repos)
	if err := generate(large, files, repos); err != nil {
		return err
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache")}
	timeIt := func(bin string, args ...string) (time.Duration, error) {
		c := exec.Command(bin, args...)
		c.Env = env
		c.Dir = home
		start := time.Now()
		out, err := c.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %v\n%s", bin, args, err, out)
		}
		return d, nil
	}
	type series struct{ old, new []time.Duration }
	cases := []struct {
		name string
		args []string
		runs int
	}{
		{"cordon version", []string{"version"}, n * 3},
		{"empty workspace", []string{"policy", "--explain", "--workspace", empty, "--", "true"}, n * 3},
		{fmt.Sprintf("%d files, %d repositories", files, repos), []string{"policy", "--explain", "--workspace", large, "--", "true"}, n},
	}
	res := make([]series, len(cases))
	for i, c := range cases {
		// One warm-up each: the first walk reads the tree into the cache.
		for _, bin := range []string{oldBin, newBin} {
			if _, err := timeIt(bin, c.args...); err != nil {
				return err
			}
		}
		for range c.runs {
			for _, s := range []struct {
				bin string
				dst *[]time.Duration
			}{{oldBin, &res[i].old}, {newBin, &res[i].new}} {
				d, err := timeIt(s.bin, c.args...)
				if err != nil {
					return err
				}
				*s.dst = append(*s.dst, d)
			}
		}
	}
	// In process: rounds of the two timers, interleaved.
	state := filepath.Join(tmp, "state")
	inproc := make([]series, len(cases))
	for i := 1; i < len(cases); i++ {
		ws := cases[i].args[3]
		for range 5 {
			for _, s := range []struct {
				bin string
				dst *[]time.Duration
			}{{oldTimer, &inproc[i].old}, {newTimer, &inproc[i].new}} {
				c := exec.Command(s.bin, ws, home, state, fmt.Sprint(max(3, cases[i].runs/5)))
				out, err := c.Output()
				if err != nil {
					return fmt.Errorf("%s: %v", s.bin, err)
				}
				var ns int64
				if _, err := fmt.Sscan(string(out), &ns); err != nil {
					return fmt.Errorf("%s printed %q", s.bin, out)
				}
				*s.dst = append(*s.dst, time.Duration(ns))
			}
		}
	}
	fmt.Printf("\nin process: policy.Load + plan.Build, medians of 5 interleaved rounds\n")
	fmt.Printf("%-32s %12s %12s %8s\n", "", "baseline", "this tree", "ratio")
	for i := 1; i < len(cases); i++ {
		o, w := median(inproc[i].old), median(inproc[i].new)
		fmt.Printf("%-32s %12s %12s %7.2fx\n", "plan, "+cases[i].name, ms(o), ms(w), float64(w)/float64(o))
	}

	vOld, vNew := median(res[0].old), median(res[0].new)
	fmt.Printf("\nwhole command: `policy --explain` minus `version` (Go start-up), medians\n")
	fmt.Printf("%-32s %12s %12s %8s\n", "", "baseline", "this tree", "ratio")
	fmt.Printf("%-32s %12s %12s\n", cases[0].name, ms(vOld), ms(vNew))
	for i := 1; i < len(cases); i++ {
		o, w := median(res[i].old)-vOld, median(res[i].new)-vNew
		fmt.Printf("%-32s %12s %12s %7.2fx\n", "plan, "+cases[i].name, ms(o), ms(w), float64(w)/float64(o))
	}
	return nil
}

// timerSource times policy.Load and plan.Build in process: it takes the
// workspace, the fake home, the state directory and a count, and prints
// the median in nanoseconds. It uses only API both trees have.
const timerSource = `package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

func main() {
	ws, home, state := os.Args[1], os.Args[2], os.Args[3]
	n, _ := strconv.Atoi(os.Args[4])
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_CACHE_HOME": filepath.Join(home, ".cache"), "XDG_STATE_HOME": filepath.Join(home, ".local", "state")}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	h := policy.Host{Home: home, Cwd: ws, Getenv: getenv}
	var ds []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		p, err := policy.Load(policy.Options{Host: h})
		if err == nil {
			_, err = plan.Build(p, []string{"true"}, plan.Options{Home: home, Cwd: ws, Getenv: getenv, StateDir: state, Host: launch.HostFacts(p, launch.SelfHelper)})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	fmt.Println(int64(ds[len(ds)/2]))
}
`

// buildTimer builds timerSource against the module in dir, adding it
// through a build overlay so the tree is not written.
func buildTimer(tmp, dir, out string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	srcFile := filepath.Join(tmp, filepath.Base(out)+".go")
	if err := os.WriteFile(srcFile, []byte(timerSource), 0o644); err != nil {
		return err
	}
	virtual := filepath.Join(absDir, "internal", "timeplan-overlay", "main.go")
	overlay := filepath.Join(tmp, filepath.Base(out)+".json")
	j := fmt.Sprintf(`{"Replace":{%q:%q}}`, virtual, srcFile)
	if err := os.WriteFile(overlay, []byte(j), 0o644); err != nil {
		return err
	}
	b := exec.Command("go", "build", "-overlay", overlay, "-o", out, "./internal/timeplan-overlay")
	b.Dir = absDir
	b.Stderr = os.Stderr
	b.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if err := b.Run(); err != nil {
		return fmt.Errorf("building the plan timer in %s: %w", dir, err)
	}
	return nil
}

// build compiles cordon and its sibling binaries (./cmd/...) from the
// module in dir into the directory of out, cordon's path.
func build(dir, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	b := exec.Command("go", "build", "-o", filepath.Dir(out)+string(filepath.Separator), "./cmd/...")
	b.Dir = dir
	b.Stderr = os.Stderr
	b.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if err := b.Run(); err != nil {
		return fmt.Errorf("building cordon in %s: %w", dir, err)
	}
	return nil
}

// generate makes a tree of files spread over directories of 100 files,
// nested four deep, with repos real git repositories (git init) among them.
func generate(root string, files, repos int) error {
	if err := exec.Command("git", "init", "-q", root).Run(); err != nil {
		return fmt.Errorf("git init: %w", err)
	}
	const perDir = 100
	dirs := (files + perDir - 1) / perDir
	every := max(1, dirs/max(1, repos))
	made := 0
	for d := range dirs {
		dir := filepath.Join(root, fmt.Sprintf("a%02d", d%20), fmt.Sprintf("b%02d", (d/20)%20), fmt.Sprintf("c%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if d%every == 0 && made < repos {
			if err := exec.Command("git", "init", "-q", dir).Run(); err != nil {
				return fmt.Errorf("git init %s: %w", dir, err)
			}
			made++
		}
		for f := 0; f < perDir && d*perDir+f < files; f++ {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), nil, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
