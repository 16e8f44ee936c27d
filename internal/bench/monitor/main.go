// Command benchmonitor measures what the violation monitor (package
// monitor: a seccomp user-notification filter whose every watched call,
// open, openat, execve, rename, connect and the rest, goes to cordon on
// the host before it continues) costs a command, with the monitor on
// against off, in one run, and prints each median and ratio:
//
//   - a warm `go build ./...` of a small module (three packages, 20 files
//     importing fmt, net/http and encoding/json; no dependencies, no
//     network: GOPROXY=off), target on/off at most 1.3x;
//   - a file-heavy `find GOROOT/src -type f -name '*.go' -exec cat {} +`
//     over Go's source tree, target at most 2x;
//   - a shell loop opening one file 20,000 times: the cost of one watched
//     call, with little else;
//   - `cordon run -- /bin/true`: the monitor's start cost. A default run
//     does not start the monitor (its result has no "monitor" entry, which
//     the benchmark checks), so there it costs nothing.
//
// Off is `cordon run --json -- CMD`; on is `cordon test --json -- CMD`,
// which differs from it only in turning the monitor on and printing its
// report (a few lines on stderr). It changes nothing else, unlike
// --audit-log (which also records planted files and the network proxy's
// decisions) or the config's on_violation. --json, on both, gives the
// monitor's count of watched calls ("monitor": {"calls": N}) and the
// command tree's CPU time, so the benchmark also prints the calls watched,
// the wall time each one adds ((on - off) / calls), cordon's own CPU time
// (its process and reaped children, less the command tree's), of which
// the monitor's supervisor is the difference between on and off, and the
// command tree's (which pays for each call's trip to cordon and back).
//
// With -landlock it measures the Landlock-only backend's supervisor
// instead (package monitor with Options.Supervise: every open, create,
// remove, rename, link and metadata change goes to cordon, which performs
// it by descriptor): on is `cordon run --backend landlock`, off the same
// with a cordon built without the supervisor (-tags cordon_unsupervised,
// built into the scratch directory), target for the warm go build at most
// 1.35x; the find+cat line has no target there (the supervisor performs
// every open, which the monitor only looks at).
//
// Everything runs in a scratch directory (-dir, by default a new one under
// the user's cache directory, $XDG_CACHE_HOME or ~/.cache/cordon-bench:
// not under /tmp, which the sandbox replaces) with a home of its own, so
// the sandbox's Go build cache (HOME/.cache/cordon/sandbox/...) is the
// benchmark's: one build of each, on and off, warms it before the timed
// ones. The runs are interleaved, on and off alternating which goes first
// in each round. Each watched call waits for cordon's supervisor to be
// scheduled and answer, so the monitor's cost grows with the machine's
// load: run it on an otherwise idle machine (it prints the load average
// before and after). Run it with:
//
//	go run ./internal/bench/monitor [-landlock] [-runs 5] [-true-runs 20] [-cordon PATH] [-dir DIR]
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

func main() {
	runs := flag.Int("runs", 5, "timed runs of each go build and find, monitor on and off")
	trueRuns := flag.Int("true-runs", 20, "timed runs of /bin/true, monitor on and off")
	cordon := flag.String("cordon", "", "cordon binary, with cordon-helper beside it (default: build ./cmd/... into the scratch directory)")
	dir := flag.String("dir", "", "scratch directory, not under /tmp (default: a new one under the user's cache directory); removed afterwards")
	landlock := flag.Bool("landlock", false, "measure the Landlock-only backend's supervisor: on is cordon run --backend landlock, off the same built with -tags cordon_unsupervised")
	flag.Parse()
	if *runs < 1 || *trueRuns < 1 {
		fmt.Fprintln(os.Stderr, "benchmonitor: -runs and -true-runs must be at least 1")
		os.Exit(2)
	}
	if err := run(*runs, *trueRuns, *cordon, *dir, *landlock); err != nil {
		fmt.Fprintln(os.Stderr, "benchmonitor:", err)
		os.Exit(1)
	}
}

// A bench is one command timed with the monitor off and on.
type bench struct {
	name   string
	argv   []string // the command, after --
	runs   int
	target float64 // the ratio on/off to stay under, or 0
}

// sample is one timed run.
type sample struct {
	wall time.Duration
	// own is cordon's own CPU time: its process's and its reaped
	// children's, less the command tree's (the result's usage).
	own time.Duration
	// tree is the command tree's CPU time (the result's usage).
	tree  time.Duration
	calls int64 // watched calls (monitor on)
}

// side is how one side of a bench runs: cordon binary, subcommand and
// flags.
type side struct {
	bin, sub string
	flags    []string
}

func run(runs, trueRuns int, cordon, dir string, landlock bool) error {
	dir, err := scratch(dir)
	if err != nil {
		return err
	}
	if os.Getenv("BENCH_KEEP") == "" {
		defer removeAll(dir)
	}
	if cordon == "" {
		cordon = filepath.Join(dir, "cordon")
		b := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/...")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return fmt.Errorf("building cordon: %w", err)
		}
	}
	off, on := side{cordon, "run", nil}, side{cordon, "test", nil}
	if landlock {
		unsup := filepath.Join(dir, "unsupervised")
		b := exec.Command("go", "build", "-tags", "cordon_unsupervised", "-o", unsup+string(filepath.Separator), "./cmd/...")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return fmt.Errorf("building cordon without the supervisor: %w", err)
		}
		ll := []string{"--backend", "landlock"}
		off, on = side{filepath.Join(unsup, "cordon"), "run", ll}, side{cordon, "run", ll}
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	out, err := exec.Command(goBin, "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "src")
	home := filepath.Join(dir, "home")
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	if err := writeModule(ws); err != nil {
		return err
	}
	// The environment of a user whose go is on PATH; the sandbox passes
	// PATH, HOME and CGO_ENABLED in and gives go a build cache of its own.
	env := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"CGO_ENABLED=0", "GOTOOLCHAIN=local"}
	loadBefore := loadAvg()

	// A default run does not start the monitor.
	res, _, err := cordonRun(side{cordon, "run", nil}, ws, env, []string{"/bin/true"})
	if err != nil {
		return err
	}
	if res.Monitor != nil {
		return fmt.Errorf("a default cordon run started the violation monitor (%d calls watched)", res.Monitor.Calls)
	}

	buildTarget, findTarget := 1.3, 2.0
	if landlock {
		// The supervisor performs every open itself: a file-heavy
		// command pays more than under the monitor, which only looks.
		buildTarget, findTarget = 1.35, 0
	}
	benches := []bench{
		{"go build (warm)", []string{"go", "build", "./..."}, runs, buildTarget},
		{"find+cat GOROOT/src", []string{"sh", "-c", `find "$1" -type f -name '*.go' -exec cat {} + >/dev/null`, "sh", src}, runs, findTarget},
		{"20000 opens (sh loop)", []string{"sh", "-c", `i=0; while [ $i -lt 20000 ]; do : <"$1"; i=$((i+1)); done`, "sh", filepath.Join(ws, "go.mod")}, runs, 0},
		{"/bin/true", []string{"/bin/true"}, trueRuns, 0},
	}
	// Warm up: the sandbox's build cache (one build of each), the page
	// cache for GOROOT/src, cordon's walk cache.
	for _, b := range benches {
		for _, sd := range []side{off, on} {
			if _, _, err := cordonRun(sd, ws, env, b.argv); err != nil {
				return fmt.Errorf("warming up: %w", err)
			}
		}
	}

	if landlock {
		fmt.Printf("cordon %s; off: %s run --json --backend landlock --env GOPROXY=off -- CMD (built -tags cordon_unsupervised), on: cordon run --json --backend landlock --env GOPROXY=off -- CMD (the supervisor); workspace %s\n", cordon, off.bin, ws)
	} else {
		fmt.Printf("cordon %s; off: cordon run --json --env GOPROXY=off -- CMD, on: cordon test --json --env GOPROXY=off -- CMD; workspace %s\n", cordon, ws)
	}
	type result struct{ off, on []sample }
	results := make([]result, len(benches))
	for i, b := range benches {
		for r := 0; r < b.runs; r++ {
			// Alternate which goes first.
			sides := []bool{false, true}
			if r%2 == 1 {
				sides = []bool{true, false}
			}
			for _, isOn := range sides {
				sd := off
				if isOn {
					sd = on
				}
				res, s, err := cordonRun(sd, ws, env, b.argv)
				if err != nil {
					return err
				}
				if !isOn {
					results[i].off = append(results[i].off, s)
					continue
				}
				if landlock {
					results[i].on = append(results[i].on, s)
					continue
				}
				if res.Monitor == nil {
					return fmt.Errorf("%s: cordon test ran without the violation monitor", b.name)
				}
				s.calls = res.Monitor.Calls
				results[i].on = append(results[i].on, s)
			}
		}
	}

	for i, b := range benches {
		off, on := results[i].off, results[i].on
		offWall, onWall := median(off, wallOf), median(on, wallOf)
		offOwn, onOwn := median(off, ownOf), median(on, ownOf)
		offTree, onTree := median(off, treeOf), median(on, treeOf)
		calls := medianCalls(on)
		ratio := float64(onWall) / float64(offWall)
		line := fmt.Sprintf("%s: off %.0f ms, on %.0f ms: %.2fx", b.name, ms(offWall), ms(onWall), ratio)
		if offWall < 100*time.Millisecond {
			line = fmt.Sprintf("%s: off %.1f ms, on %.1f ms: %.2fx (+%.1f ms)", b.name, ms(offWall), ms(onWall), ratio, ms(onWall-offWall))
		}
		if b.target > 0 {
			verdict := "met"
			if ratio > b.target {
				verdict = "MISSED"
			}
			line += fmt.Sprintf(" (target <= %.3gx: %s)", b.target, verdict)
		}
		fmt.Println(line)
		if landlock {
			fmt.Printf("  CPU: cordon's own off %.0f ms, on %.0f ms (the supervisor's is the difference); the command tree's off %.0f ms, on %.0f ms; %d runs each, wall min/max off %.1f/%.1f ms, on %.1f/%.1f ms\n",
				ms(offOwn), ms(onOwn), ms(offTree), ms(onTree), b.runs, ms(minOf(off)), ms(maxOf(off)), ms(minOf(on)), ms(maxOf(on)))
			continue
		}
		if calls < 100 {
			fmt.Printf("  %d calls watched; CPU: cordon's own off %.0f ms, on %.0f ms; %d runs each, wall min/max off %.1f/%.1f ms, on %.1f/%.1f ms\n",
				calls, ms(offOwn), ms(onOwn), b.runs, ms(minOf(off)), ms(maxOf(off)), ms(minOf(on)), ms(maxOf(on)))
			continue
		}
		perCall := func(d time.Duration) float64 { return float64(d) / float64(calls) / float64(time.Microsecond) }
		fmt.Printf("  %d calls watched (%.0f a second of the run on), %+.1f µs of wall time each\n",
			calls, float64(calls)/onWall.Seconds(), perCall(onWall-offWall))
		fmt.Printf("  CPU: cordon's own off %.0f ms, on %.0f ms (%+.1f µs a call); the command tree's off %.0f ms, on %.0f ms (%+.1f µs a call)\n",
			ms(offOwn), ms(onOwn), perCall(onOwn-offOwn), ms(offTree), ms(onTree), perCall(onTree-offTree))
		fmt.Printf("  %d runs each, wall min/max off %.0f/%.0f ms, on %.0f/%.0f ms\n",
			b.runs, ms(minOf(off)), ms(maxOf(off)), ms(minOf(on)), ms(maxOf(on)))
	}
	if landlock {
		fmt.Println("the Landlock-only backend always runs its supervisor; the /bin/true line is its start cost")
	} else {
		fmt.Println("a default cordon run does not start the monitor (its result has no \"monitor\" entry): it costs nothing there; the /bin/true line is the monitor's start cost when asked for")
	}
	fmt.Printf("(%s, %d CPUs, load average %s before, %s after)\n", runtime.Version(), runtime.NumCPU(), loadBefore, loadAvg())
	return nil
}

// cordonResult is what the benchmark reads of cordon's --json result.
type cordonResult struct {
	ExitCode int `json:"exit_code"`
	Monitor  *struct {
		Calls      int64 `json:"calls"`
		Unresolved int64 `json:"unresolved"`
	} `json:"monitor"`
	Usage struct {
		UserCPU   int64 `json:"user_cpu_ns"`
		SystemCPU int64 `json:"system_cpu_ns"`
	} `json:"usage"`
}

// cordonRun runs `cordon SUB --json-out FILE [FLAGS] --env GOPROXY=off --
// argv` in ws, as sd says, and returns its result and timing.
func cordonRun(sd side, ws string, env, argv []string) (*cordonResult, sample, error) {
	out, err := os.CreateTemp("", "cordon-bench-result-")
	if err != nil {
		return nil, sample{}, err
	}
	out.Close()
	defer os.Remove(out.Name())
	args := append(append([]string{sd.sub, "--json-out", out.Name()}, sd.flags...), "--env", "GOPROXY=off", "--")
	args = append(args, argv...)
	cmd := exec.Command(sd.bin, args...)
	cmd.Dir = ws
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	what := fmt.Sprintf("cordon %s", strings.Join(args, " "))
	if err != nil {
		return nil, sample{}, fmt.Errorf("%s: %v\n%s%s", what, err, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		return nil, sample{}, fmt.Errorf("%s: %v", what, err)
	}
	var res cordonResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, sample{}, fmt.Errorf("%s: reading its result: %v\n%s", what, err, stderr.String())
	}
	total := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	tree := time.Duration(res.Usage.UserCPU + res.Usage.SystemCPU)
	return &res, sample{wall: wall, own: total - tree, tree: tree}, nil
}

// scratch returns the scratch directory: dir, created, or a new one under
// the user's cache directory.
func scratch(dir string) (string, error) {
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		parent := filepath.Join(cache, "cordon-bench")
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return "", err
		}
		if dir, err = os.MkdirTemp(parent, "benchmonitor-"); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if dir == "/tmp" || strings.HasPrefix(dir, "/tmp/") {
		return "", errors.New("the scratch directory is under /tmp, which the sandbox replaces with its own: give another with -dir")
	}
	return dir, nil
}

// writeModule writes the module built: package model (encoding/json),
// package server (net/http, model) and the command app (fmt, server),
// 20 files in all.
func writeModule(dir string) error {
	files := map[string]string{"go.mod": "module example.com/benchmon\n\ngo 1.26\n"}
	for i := 0; i < 8; i++ {
		files[fmt.Sprintf("model/m%d.go", i)] = fmt.Sprintf(`package model

import "encoding/json"

// Item%[1]d is a record.
type Item%[1]d struct {
	ID   int               `+"`json:\"id\"`"+`
	Name string            `+"`json:\"name\"`"+`
	Tags map[string]string `+"`json:\"tags,omitempty\"`"+`
}

// Encode%[1]d encodes it.
func Encode%[1]d(it Item%[1]d) ([]byte, error) { return json.Marshal(it) }

// Decode%[1]d decodes it.
func Decode%[1]d(b []byte) (Item%[1]d, error) {
	var it Item%[1]d
	err := json.Unmarshal(b, &it)
	return it, err
}
`, i)
	}
	for i := 0; i < 8; i++ {
		files[fmt.Sprintf("server/h%d.go", i)] = fmt.Sprintf(`package server

import (
	"net/http"

	"example.com/benchmon/model"
)

func handle%[1]d(w http.ResponseWriter, r *http.Request) {
	b, err := model.Encode%[1]d(model.Item%[1]d{ID: %[1]d, Name: r.URL.Path})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
`, i)
	}
	var reg strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&reg, "\tmux.HandleFunc(\"/item/%d\", handle%d)\n", i, i)
	}
	files["server/server.go"] = "package server\n\nimport \"net/http\"\n\n// Mux serves the items.\nfunc Mux() *http.ServeMux {\n\tmux := http.NewServeMux()\n" + reg.String() + "\treturn mux\n}\n"
	files["cmd/app/main.go"] = `package main

import (
	"fmt"
	"net/http"

	"example.com/benchmon/server"
)

func main() {
	fmt.Println("listening on :8080")
	fmt.Println(http.ListenAndServe(":8080", server.Mux()))
}
`
	files["cmd/app/version.go"] = "package main\n\nimport \"fmt\"\n\nfunc version() string { return fmt.Sprintf(\"app %d.%d\", 1, 0) }\n"
	files["cmd/app/flags.go"] = "package main\n\nimport \"fmt\"\n\nvar _ = fmt.Sprint(version())\n"
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func wallOf(s sample) time.Duration { return s.wall }
func ownOf(s sample) time.Duration  { return s.own }
func treeOf(s sample) time.Duration { return s.tree }

func median(ss []sample, f func(sample) time.Duration) time.Duration {
	var ds []time.Duration
	for _, s := range ss {
		ds = append(ds, f(s))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func medianCalls(ss []sample) int64 {
	var cs []int64
	for _, s := range ss {
		cs = append(cs, s.calls)
	}
	slices.Sort(cs)
	return cs[len(cs)/2]
}

func byWall(a, b sample) int { return cmp.Compare(a.wall, b.wall) }

func minOf(ss []sample) time.Duration { return slices.MinFunc(ss, byWall).wall }
func maxOf(ss []sample) time.Duration { return slices.MaxFunc(ss, byWall).wall }

// loadAvg is the 1-, 5- and 15-minute load average, or "?".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// removeAll removes the scratch directory, read-only files of the
// sandbox's caches too.
func removeAll(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(dir)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
