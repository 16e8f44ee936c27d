// Command benchstartup measures the start-up cost of cordon: the median
// wall time of `cordon run -- /bin/true` (default profile, bwrap backend
// with the helper) against bare /bin/true and against plain `bwrap
// --unshare-all --ro-bind / / --dev /dev --proc /proc -- /bin/true`, and of
// `cordon run --backend landlock -- /bin/true` against bare /bin/true, all
// in one run with the four interleaved, and prints the ratios. It also
// times the parts no cordon run can avoid in this design (an empty Go
// program's start for cordon's own, bwrap with cordon's mounts running
// /bin/true, and the start of the cordon-helper binary) and prints the
// floor they add up to. The network policy's filtered mode
// (--allow-net, with the helper's listeners and the host's proxy) and
// loopback mode are timed against the default profile. And `cordon run --
// /bin/true` in a workspace of 100,000 files (-files) against the empty
// one: with the walk cache of the runs before (the second and later runs)
// and without (the first run: its walk cache is removed before each). With
// -concurrent N it instead times N runs at once of cordon against N of
// plain bwrap (runConcurrent); with -cpu, the CPU time of one run, of
// cordon and everything it starts, against the baseline's and the parts
// no run can avoid (runCPU); with -ask, runs on a pseudo-terminal where
// nothing is asked, with and without --ask (runAsk); with -session,
// /bin/true run in a session (run_command's, the library's Session)
// against plain bwrap and cordon run, and with -files N a session in a
// workspace of N files against one in the empty workspace (runSession).
// Run it with:
//
//	go run ./internal/bench/startup [-n 200] [-files 100000] [-perdir 10] [-baseline OLD-CORDON] [-repo]
//	go run ./internal/bench/startup -concurrent 200 [-rounds 5] [-workspaces 50]
//	go run ./internal/bench/startup -cpu -dir DIR [-n 200] [-baseline OLD-CORDON] [-files 100000]
//	go run ./internal/bench/startup -ask [-n 30] [-backend bwrap|landlock] [-cats 50] [-opens 1000] [-baseline MAIN-CORDON]
//	go run ./internal/bench/startup -repos 0,50,200,1000 [-n 11] [-baseline OLD-CORDON] [-gostart]
//	go run ./internal/bench/startup -session [-n 200] [-repo] [-files 100000]
//	go run ./internal/bench/startup -floor 200 [-n 21]
//
// With -repos it instead times workspaces holding that many nested git
// repositories each (runRepos); with -gostart also the start of a Go
// program inside them. With -floor N it measures the kernel's part of a
// run in N nested repositories that this design cannot avoid, the
// placeholders and the helper's mounts, with cordon's system calls and
// nothing of cordon's own (runFloor).
//
// With -repo the empty and the large workspace are git repositories as a
// project's are (a core.hooksPath in the work tree, an included config
// file, a Python virtualenv), so that the post-run check has git's
// effective configuration and the tool files to look at. With -baseline
// it also prints this build's times against the baseline's, in the empty
// and the large workspace.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/internal/launch"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

func main() {
	closeInherited()
	if len(os.Args) > 1 && os.Args[1] == floorChildArg {
		if err := floorChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == sessionChildArg {
		if err := sessionChild(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	n := flag.Int("n", 200, "runs of each command")
	cordon := flag.String("cordon", "", "cordon binary, with cordon-helper beside it (default: build ./cmd/... into a temporary directory)")
	bwrap := flag.String("bwrap", "/usr/bin/bwrap", "bubblewrap binary")
	concurrent := flag.Int("concurrent", 0, "time this many runs at once of cordon and of plain bwrap instead (e.g. 200)")
	rounds := flag.Int("rounds", 5, "rounds of -concurrent, alternating the two")
	workspaces := flag.Int("workspaces", 1, "with -concurrent: spread the runs over this many workspaces")
	files := flag.Int("files", 100_000, "files in the large workspace (0: none)")
	perDir := flag.Int("perdir", 10, "files in each directory of the large workspace")
	baseline := flag.String("baseline", "", "another cordon binary also timed in the empty and the large workspace")
	repo := flag.Bool("repo", false, "make the workspaces git repositories with a hooksPath, an include and a virtualenv")
	cpu := flag.Bool("cpu", false, "measure the CPU time of one run (cordon and all it starts) instead, against -baseline")
	dir := flag.String("dir", "", "with -cpu: where to make the fake home and the workspace (not under /tmp, as a real home is not)")
	ask := flag.Bool("ask", false, "time runs on a pty where nothing is asked, with and without --ask (and -baseline without), instead")
	backend := flag.String("backend", "bwrap", "with -ask: the backend")
	cats := flag.Int("cats", 50, "with -ask: the cat processes of the first workload that opens files")
	opens := flag.Int("opens", 1000, "with -ask: the opens of the shell's own in the second")
	repos := flag.String("repos", "", "time workspaces holding these counts of nested git repositories instead (e.g. 0,50,200,1000), against -baseline")
	gostart := flag.Bool("gostart", false, "with -repos: also time runs that start an empty Go program 100 times, and print the time of one start inside")
	floor := flag.Int("floor", 0, "measure instead the kernel's part of a run in this many nested repositories that this design cannot avoid: placeholders and the helper's mounts, -n rounds")
	session := flag.Bool("session", false, "time commands in a session (run_command's, the library's Session) against plain bwrap and cordon run instead")
	flag.Parse()
	if *floor > 0 {
		if err := runFloor(*floor, *n); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if *ask {
		if err := runAsk(*n, *cordon, *baseline, *backend, *cats, *opens); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if *session {
		// -files only when given: the large workspace is an addition.
		bigFiles := 0
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "files" {
				bigFiles = *files
			}
		})
		if err := runSession(*n, *cordon, *bwrap, *repo, bigFiles, *perDir); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if *repos != "" {
		if err := runRepos(*n, *cordon, *baseline, *repos, *gostart); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if *cpu {
		// -files only when given: the large workspace is an addition.
		bigFiles := 0
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "files" {
				bigFiles = *files
			}
		})
		if err := runCPU(*n, *cordon, *bwrap, *baseline, *dir, bigFiles, *perDir); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if *concurrent > 0 {
		if err := runConcurrent(*concurrent, *rounds, *workspaces, *cordon, *bwrap); err != nil {
			fmt.Fprintln(os.Stderr, "benchstartup:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*n, *cordon, *bwrap, *files, *perDir, *baseline, *repo); err != nil {
		fmt.Fprintln(os.Stderr, "benchstartup:", err)
		os.Exit(1)
	}
}

func run(n int, cordon, bwrap string, files, perDir int, baseline string, repo bool) error {
	tmp, err := os.MkdirTemp("", "cordon-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	cordon, home, ws, env, err := setUp(tmp, cordon)
	if err != nil {
		return err
	}
	if repo {
		if err := makeRepo(ws); err != nil {
			return fmt.Errorf("making the empty workspace a repository: %w", err)
		}
	}
	emptyGo, err := buildEmptyGo(tmp)
	if err != nil {
		return err
	}
	mounts, err := cordonMounts(tmp, home, env)
	if err != nil {
		return err
	}
	cases := []struct {
		name string
		argv []string
	}{
		{"/bin/true", []string{"/bin/true"}},
		{"bwrap", []string{bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}},
		{"cordon run", []string{cordon, "run", "--", "/bin/true"}},
		{"cordon landlock", []string{cordon, "run", "--backend", "landlock", "--", "/bin/true"}},
		{"cordon version", []string{cordon, "version"}},
		{"bwrap+mounts", mounts},
		{"cordon filtered", []string{cordon, "run", "--allow-net", "127.0.0.1:1", "--", "/bin/true"}},
		{"cordon loopback", []string{cordon, "run", "--net", "loopback", "--", "/bin/true"}},
		{"empty Go", []string{emptyGo}},
		{"helper start", []string{filepath.Join(filepath.Dir(cordon), "cordon-helper")}},
	}
	// Cases run elsewhere than in ws with env.
	where := map[string]caseSetup{}
	bigAt := len(cases)
	if files > 0 {
		big, err := bigCases(tmp, home, ws, env, files, perDir, baseline, repo)
		if err != nil {
			return err
		}
		for _, c := range big {
			bin := cordon
			if c.baseline {
				bin = baseline
			}
			cases = append(cases, struct {
				name string
				argv []string
			}{c.name, []string{bin, "run", "--", "/bin/true"}})
			where[c.name] = c
		}
	}
	times := make([][]time.Duration, len(cases))
	for i := 0; i < n+5; i++ {
		for c, cs := range cases {
			cmd := exec.Command(cs.argv[0], cs.argv[1:]...)
			cmd.Dir = ws
			cmd.Env = env
			if w, ok := where[cs.name]; ok {
				cmd.Dir, cmd.Env = w.dir, w.env
				if err := w.before(); err != nil {
					return fmt.Errorf("%s: %w", cs.name, err)
				}
			}
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			if err != nil && !(cs.name == "helper start" && cmd.ProcessState.ExitCode() == 125) {
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
		fmt.Printf("%-15s median %8.2f ms  (p10 %.2f, p90 %.2f) over %d runs\n", cases[c].name,
			ms(med[c]), ms(times[c][len(times[c])/10]), ms(times[c][len(times[c])*9/10]), n)
	}
	fmt.Printf("ratio cordon/bwrap: %.2fx (target <= 3.0x unprivileged, 3.4x as root)\n", float64(med[2])/float64(med[1]))
	fmt.Printf("ratio cordon/true:  %.2fx\n", float64(med[2])/float64(med[0]))
	fmt.Printf("cordon overhead over plain bwrap: %.2f ms\n", ms(med[2]-med[1]))
	fmt.Printf("landlock backend over bare /bin/true: +%.2f ms (target <= +6 ms)\n", ms(med[3]-med[0]))
	fmt.Printf("ratio filtered/default: %.2fx (target <= 1.3x); loopback/default: %.2fx\n", float64(med[6])/float64(med[2]), float64(med[7])/float64(med[2]))
	// The floor: what cordon run costs with no work of its own, from the
	// parts that cannot be avoided in this design: a Go program's start
	// (cordon's, with none of its work), bwrap with cordon's mounts, and
	// the helper's own start (exec, Go runtime and its package inits; run
	// alone it exits at once, 125).
	emptyAt := 8
	floor := med[emptyAt] + med[5] + med[emptyAt+1]
	fmt.Printf("floor of the bwrap backend: an empty Go program %.2f ms + bwrap with cordon's mounts running /bin/true %.2f ms + the helper's own start %.2f ms = %.2f ms = %.2fx plain bwrap (cordon run is %.2f ms over it)\n",
		ms(med[emptyAt]), ms(med[5]), ms(med[emptyAt+1]), ms(floor), float64(floor)/float64(med[1]), ms(med[2]-floor))
	llFloor := med[emptyAt] + med[emptyAt+1]
	fmt.Printf("floor of the Landlock-only backend: an empty Go program and the helper's start, +%.2f ms over bare /bin/true (cordon run --backend landlock is %.2f ms over it)\n", ms(llFloor), ms(med[3]-med[0]-llFloor))
	if files > 0 {
		warm, first := med[bigAt], med[bigAt+1]
		fmt.Printf("workspace of %d files: second and later runs +%.2f ms over the empty workspace (%.2fx; target <= +10 ms); first run +%.2f ms (%.2fx)\n",
			files, ms(warm-med[2]), float64(warm)/float64(med[2]), ms(first-med[2]), float64(first)/float64(med[2]))
		if baseline != "" {
			be, bb, bf := med[bigAt+2], med[bigAt+3], med[bigAt+4]
			fmt.Printf("baseline %s: workspace of %d files +%.2f ms over its empty workspace (%.2fx); first run +%.2f ms\n", baseline, files, ms(bb-be), float64(bb)/float64(be), ms(bf-be))
			fmt.Printf("this build against the baseline: empty workspace %.2fx, workspace of %d files %.2fx (later runs), %.2fx (first run)\n", float64(med[2])/float64(be), files, float64(warm)/float64(bb), float64(first)/float64(bf))
		}
	}
	return nil
}

// cordonMounts is the bwrap argv that cordon run builds for the default
// policy, with /bin/true in place of the helper, in a workspace of its own
// whose placeholders already exist (cordon creates them before bwrap).
func cordonMounts(tmp, home string, env []string) ([]string, error) {
	ws := filepath.Join(tmp, "ws-mounts")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, err
	}
	getenv := func(k string) (string, bool) {
		for _, kv := range env {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v, true
			}
		}
		return "", false
	}
	h := policy.Host{Home: home, Cwd: ws, Getenv: getenv}
	p, err := policy.Load(policy.Options{Host: h, Workspace: ws, SkipUserConfig: true})
	if err != nil {
		return nil, err
	}
	pl, err := plan.Build(p, []string{"/bin/true"}, plan.Options{Home: home, Cwd: ws, Getenv: getenv, StateDir: filepath.Join(home, ".state", "cordon"), Host: launch.HostFacts(p, launch.SelfHelper)})
	if err != nil {
		return nil, err
	}
	if pl.Backend != "bwrap" {
		return nil, fmt.Errorf("the default policy plans the %s backend, not bwrap", pl.Backend)
	}
	if err := launch.Prepare(pl); err != nil {
		return nil, err
	}
	var argv []string
	for i := 0; i < len(pl.Argv); i++ {
		switch a := pl.Argv[i]; {
		case a == "--ro-bind-fd": // the helper's binary
			i += 2
		case a == "--":
			argv = append(argv, "--", "/bin/true")
			i = len(pl.Argv)
		default:
			argv = append(argv, a)
		}
	}
	for i := 0; i+2 < len(pl.Argv); i++ {
		if pl.Argv[i] != "--ro-bind" || !slices.Contains(pl.PlaceholderPaths(), pl.Argv[i+2]) {
			continue
		}
		dst := pl.Argv[i+2]
		var err error
		if fi, serr := os.Stat(pl.Argv[i+1]); serr == nil && fi.IsDir() {
			err = os.MkdirAll(dst, 0o755)
		} else {
			err = os.WriteFile(dst, nil, 0o644)
		}
		if err != nil {
			return nil, err
		}
	}
	return argv, nil
}

// setUp builds cordon into tmp unless a binary is given, and makes a fake
// home and workspace there, so the benchmark never reads the real home;
// env is the environment every timed command runs with.
func setUp(tmp, cordon string) (bin, home, ws string, env []string, err error) {
	bin = cordon
	if bin == "" {
		// cordon finds its helper beside it: build every binary.
		bin = filepath.Join(tmp, "cordon")
		b := exec.Command("go", "build", "-o", tmp+string(filepath.Separator), "./cmd/...")
		b.Stderr = os.Stderr
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := b.Run(); err != nil {
			return "", "", "", nil, fmt.Errorf("building cordon: %w", err)
		}
	}
	home = filepath.Join(tmp, "home")
	ws = filepath.Join(tmp, "ws")
	for _, d := range []string{home, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", "", "", nil, err
		}
	}
	env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, ".state"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config")}
	return bin, home, ws, env, nil
}

// withState is env with XDG_STATE_HOME set to dir: a binary timed against
// another keeps its own state directory, so that neither is served by the
// other's walk server (one serves every cordon of its protocol version).
func withState(env []string, dir string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			kv = "XDG_STATE_HOME=" + dir
		}
		out = append(out, kv)
	}
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// buildEmptyGo builds a Go program that does nothing, the start-up floor of
// any Go binary on this machine.
func buildEmptyGo(tmp string) (string, error) {
	dir := filepath.Join(tmp, "emptygo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	files := map[string]string{"go.mod": "module emptygo\n\ngo 1.26\n", "main.go": "package main\n\nfunc main() {}\n"}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(tmp, "emptygo-bin")
	b := exec.Command("go", "build", "-o", bin, ".")
	b.Dir = dir
	b.Stderr = os.Stderr
	b.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if err := b.Run(); err != nil {
		return "", fmt.Errorf("building an empty Go program: %w", err)
	}
	return bin, nil
}
