//go:build linux

package main

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cordon-sandbox/cordon/internal/bench/benchpty"
)

// The workloads of -ask that open files: a shell loop that runs cat on a
// system file (each cat opens its libraries and locale files too), and
// one whose shell opens the file itself (one open each time round).
const (
	catLoop  = "i=0; while [ $i -lt %d ]; do cat /etc/hostname > /dev/null; i=$((i+1)); done"
	openLoop = "i=0; while [ $i -lt %d ]; do : < /etc/hostname; i=$((i+1)); done"
)

// runAsk is -ask: whole cordon runs on a pseudo-terminal (where --ask
// asks), interleaved, where nothing is asked: `cordon run -- /bin/true`,
// a shell loop of cats cat processes and one of opens opens of an
// allowed file, each without and with --ask (and with the -baseline
// binary, main's, without), on backend. It prints each median, wall and
// CPU (of cordon and all it starts), the ratios of --ask to the same
// binary without, and what --ask adds per open in the loop of opens.
func runAsk(n int, cordon, baseline, backend string, cats, opens int) error {
	if err := becomeSubreaper(); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	tmp, err := os.MkdirTemp("", "cordon-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, _, ws, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	type variant struct {
		name string
		argv []string
	}
	var cases []variant
	catsName, opensName := fmt.Sprintf("%d cats", cats), fmt.Sprintf("%d opens", opens)
	workloads := []struct {
		name string
		argv []string
	}{
		{"true", []string{"/bin/true"}},
		{catsName, []string{"sh", "-c", fmt.Sprintf(catLoop, cats)}},
		{opensName, []string{"sh", "-c", fmt.Sprintf(openLoop, opens)}},
	}
	for _, w := range workloads {
		run := []string{"run", "--backend", backend, "--"}
		if baseline != "" {
			cases = append(cases, variant{w.name + " main", append(append([]string{baseline}, run...), w.argv...)},
				variant{w.name + " main --ask", append(append([]string{baseline, "run", "--ask"}, run[1:]...), w.argv...)})
		}
		cases = append(cases,
			variant{w.name, append(append([]string{cordon}, run...), w.argv...)},
			variant{w.name + " --ask", append(append([]string{cordon, "run", "--ask"}, run[1:]...), w.argv...)})
	}
	times := make([][]time.Duration, len(cases))
	cpu := make([][]time.Duration, len(cases))
	for i := 0; i < n+3; i++ {
		for c, cs := range cases {
			before := childrenCPU()
			d, err := benchpty.Run(ws, env, cs.argv)
			if err != nil {
				return fmt.Errorf("%s: %w", cs.name, err)
			}
			if err := reapOrphans(); err != nil {
				return err
			}
			if i >= 3 { // warm-up
				times[c] = append(times[c], d)
				cpu[c] = append(cpu[c], childrenCPU()-before)
			}
		}
	}
	fmt.Printf("cordon run on a pty, %s backend, nothing asked, %d interleaved runs each:\n", backend, n)
	med, cmed := map[string]time.Duration{}, map[string]time.Duration{}
	for c, cs := range cases {
		slices.Sort(times[c])
		slices.Sort(cpu[c])
		med[cs.name], cmed[cs.name] = times[c][len(times[c])/2], cpu[c][len(cpu[c])/2]
		fmt.Printf("  %-22s wall median %8.2f ms (p10 %.2f, p90 %.2f)  CPU median %7.2f ms\n", cs.name, ms(med[cs.name]),
			ms(times[c][len(times[c])/10]), ms(times[c][len(times[c])*9/10]), ms(cmed[cs.name]))
	}
	ratio := func(m map[string]time.Duration, a, b string) float64 { return float64(m[a]) / float64(m[b]) }
	for _, wl := range workloads {
		w := wl.name
		fmt.Printf("  %s: --ask / without: wall %.3fx, CPU %.3fx", w, ratio(med, w+" --ask", w), ratio(cmed, w+" --ask", w))
		if baseline != "" {
			fmt.Printf("; --ask / main without: wall %.3fx, CPU %.3fx; --ask / main --ask: wall %.3fx, CPU %.3fx",
				ratio(med, w+" --ask", w+" main"), ratio(cmed, w+" --ask", w+" main"), ratio(med, w+" --ask", w+" main --ask"), ratio(cmed, w+" --ask", w+" main --ask"))
		}
		fmt.Println()
	}
	perOpen := func(with, without string) {
		fmt.Printf("  %s adds per open (the loop of opens): wall %.1f us, CPU %.1f us\n", with,
			float64(med[with]-med[without])/float64(opens)/1e3, float64(cmed[with]-cmed[without])/float64(opens)/1e3)
	}
	perOpen(opensName+" --ask", opensName)
	if baseline != "" {
		perOpen(opensName+" main --ask", opensName+" main")
	}
	return nil
}
