// Command benchstartup measures the start-up cost of cordon: the median
// wall time of `cordon run -- /bin/true` (default profile, bwrap backend
// with the helper) against bare /bin/true and against plain `bwrap
// --unshare-all --ro-bind / / --dev /dev --proc /proc -- /bin/true`, and of
// `cordon run --backend landlock -- /bin/true` against bare /bin/true, all
// in one run with the four interleaved, and prints the ratios. Run it with:
//
//	go run ./internal/benchstartup [-n 200]
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
	n := flag.Int("n", 200, "runs of each command")
	cordon := flag.String("cordon", "", "cordon binary (default: build ./cmd/cordon)")
	bwrap := flag.String("bwrap", "/usr/bin/bwrap", "bubblewrap binary")
	flag.Parse()
	if err := run(*n, *cordon, *bwrap); err != nil {
		fmt.Fprintln(os.Stderr, "benchstartup:", err)
		os.Exit(1)
	}
}

func run(n int, cordon, bwrap string) error {
	tmp, err := os.MkdirTemp("", "cordon-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if cordon == "" {
		cordon = filepath.Join(tmp, "cordon")
		b := exec.Command("go", "build", "-o", cordon, "./cmd/cordon")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return fmt.Errorf("building cordon: %w", err)
		}
	}
	// A fake home and workspace, so the benchmark never reads the real home.
	home := filepath.Join(tmp, "home")
	ws := filepath.Join(tmp, "ws")
	for _, d := range []string{home, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	cases := []struct {
		name string
		argv []string
	}{
		{"/bin/true", []string{"/bin/true"}},
		{"bwrap", []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}},
		{"cordon run", []string{cordon, "run", "--", "/bin/true"}},
		{"cordon landlock", []string{cordon, "run", "--backend", "landlock", "--", "/bin/true"}},
	}
	times := make([][]time.Duration, len(cases))
	for i := 0; i < n+5; i++ {
		for c, cs := range cases {
			cmd := exec.Command(cs.argv[0], cs.argv[1:]...)
			cmd.Dir = ws
			cmd.Env = env
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %v: %s", cs.name, err, out)
			}
			if i >= 5 { // warm-up
				times[c] = append(times[c], d)
			}
		}
	}
	med := make([]time.Duration, len(cases))
	for c := range cases {
		slices.Sort(times[c])
		med[c] = times[c][len(times[c])/2]
		fmt.Printf("%-12s median %8.2f ms  (p10 %.2f, p90 %.2f) over %d runs\n", cases[c].name,
			ms(med[c]), ms(times[c][len(times[c])/10]), ms(times[c][len(times[c])*9/10]), n)
	}
	fmt.Printf("ratio cordon/bwrap: %.2fx (target <= 1.5x)\n", float64(med[2])/float64(med[1]))
	fmt.Printf("ratio cordon/true:  %.2fx\n", float64(med[2])/float64(med[0]))
	fmt.Printf("cordon overhead over plain bwrap: %.2f ms\n", ms(med[2]-med[1]))
	fmt.Printf("landlock backend over bare /bin/true: +%.2f ms (target <= +3 ms)\n", ms(med[3]-med[0]))
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
