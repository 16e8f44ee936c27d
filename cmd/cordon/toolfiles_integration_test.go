//go:build linux

package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// hostTool runs name (a real tool, as the user would next run it on the
// host) in dir with the test's fake home and environment, and returns its
// combined output; it fails the test when the tool fails.
func hostTool(t *testing.T, e *sandboxEnv, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hostProgram(t, name), args...)
	cmd.Dir = dir
	cmd.Env = append(e.environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("host %s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// envPath is the PATH of the test's fake machine (see sandboxEnv.environ):
// the host tools are looked up there, as cordon looks them up inside,
// not in the PATH of whoever runs the tests (a pyenv or rustup shim).
const envPath = "/usr/local/bin:/usr/bin:/bin"

// hostProgram finds name in envPath (an absolute name is itself); without
// it the test skips, and fails under CI=true.
func hostProgram(t *testing.T, name string) string {
	t.Helper()
	if filepath.IsAbs(name) {
		return name
	}
	for _, d := range filepath.SplitList(envPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	skipOrFail(t, fmt.Sprintf("%s not found in %s", name, envPath))
	return ""
}

// warningLines are the "cordon: warning:" lines of stderr.
func warningLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "cordon: warning: ") {
			out = append(out, l)
		}
	}
	return out
}

// toolCase is a file a run plants (or changes) to make a host tool run
// a program, and the host command that would run it.
type toolCase struct {
	name string
	// tool is the program the case needs on the host and inside.
	tool string
	// setup prepares the workspace (and host files) before the run;
	// it returns the host command's environment.
	setup func(t *testing.T, e *sandboxEnv, marker string) []string
	// plant is the run's script; MARKER in it is the marker's path.
	plant string
	// existing: the file existed before the run (read-only under
	// bubblewrap: the run's write fails).
	existing bool
	// newDir: the run creates the file in a directory it made itself,
	// which the Landlock-only backend's supervisor leaves to the check
	// after the run; elsewhere it refuses the write, new file or not.
	newDir bool
	// warn is what a warning line names.
	warn string
	// host is the host command, run in the workspace.
	host []string
}

// toolCases are the plants of issue 22: a project .npmrc's script-shell
// on `npm run`, .cargo/config.toml's rustc-wrapper on `cargo metadata`,
// .mvn/jvm.config's -javaagent on `mvn -v`, and a virtual environment's
// .pth and activate script.
func toolCases() []toolCase {
	npmProject := func(t *testing.T, e *sandboxEnv, _ string) []string {
		writeFile(t, filepath.Join(e.ws, "package.json"), `{"name":"p","version":"1.0.0","scripts":{"lint":"echo LINT-OK"}}`)
		return []string{"npm_config_cache=" + filepath.Join(e.root, "npm-cache"), "npm_config_update_notifier=false"}
	}
	return []toolCase{
		{
			name: "npmrc-new", tool: "npm", setup: npmProject,
			plant: `printf '#!/bin/sh\n: > MARKER\nexec /bin/sh "$@"\n' > evil.sh && chmod +x evil.sh && echo "script-shell=$PWD/evil.sh" > .npmrc`,
			warn:  `planted .npmrc (it may run code when a tool opens this directory): "script-shell=`, host: []string{"npm", "run", "lint"},
		},
		{
			name: "npmrc-existing", tool: "npm", existing: true,
			setup: func(t *testing.T, e *sandboxEnv, m string) []string {
				writeFile(t, filepath.Join(e.ws, ".npmrc"), "fund=false\n")
				return npmProject(t, e, m)
			},
			plant: `printf '#!/bin/sh\n: > MARKER\nexec /bin/sh "$@"\n' > evil.sh && chmod +x evil.sh && echo "script-shell=$PWD/evil.sh" >> .npmrc`,
			warn:  ".npmrc", host: []string{"npm", "run", "lint"},
		},
		{
			name: "cargo-config", tool: "cargo",
			setup: func(t *testing.T, e *sandboxEnv, _ string) []string {
				writeFile(t, filepath.Join(e.ws, "Cargo.toml"), "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
				writeFile(t, filepath.Join(e.ws, "src", "lib.rs"), "pub fn f() {}\n")
				return []string{"CARGO_HOME=" + filepath.Join(e.root, "cargo-home")}
			},
			newDir: true,
			plant:  `printf '#!/bin/sh\n: > MARKER\nexec "$@"\n' > evil.sh && chmod +x evil.sh && mkdir -p .cargo && printf '[build]\nrustc-wrapper = "%s/evil.sh"\n' "$PWD" > .cargo/config.toml`,
			warn:   "planted .cargo/config.toml", host: []string{"cargo", "metadata", "--offline", "--format-version", "1"},
		},
		{
			name: "maven-jvm-config", tool: "mvn",
			setup: func(t *testing.T, e *sandboxEnv, marker string) []string {
				javaAgent(t, filepath.Join(e.ws, "agent.jar"))
				return []string{agentMarkerVar + "=" + marker}
			},
			newDir: true,
			plant:  `mkdir -p .mvn && echo "-javaagent:$PWD/agent.jar" > .mvn/jvm.config`,
			warn:   `planted .mvn/jvm.config (it may run code when a tool opens this directory): "-javaagent:`, host: []string{"mvn", "-v"},
		},
	}
}

// TestToolFilePlantsDoNotRun: what a run plants in a project's tool files
// (a new .npmrc with script-shell, a line added to an existing one,
// .cargo/config.toml's rustc-wrapper, .mvn/jvm.config's -javaagent) never
// runs on the host: the real tool, run on the host after the run, creates
// no marker; cordon says what it found in one warning line and an audit
// record; where the file is read-only during the run (bubblewrap's mounts
// for a file that existed, the Landlock-only backend's supervisor for any
// file in a directory that existed) the write fails instead. With
// --no-disarm a new file stays and the same host command runs it: the
// test's plant is real. Both backends.
func TestToolFilePlantsDoNotRun(t *testing.T) {
	t.Parallel()
	for _, tc := range toolCases() {
		for _, backend := range []string{"bwrap", "landlock"} {
			for _, keep := range []bool{false, true} {
				// Read-only during the run: bubblewrap's mounts keep a file
				// that existed, the Landlock-only backend's supervisor any
				// file in a directory that existed.
				readOnly := tc.existing || backend == "landlock" && !tc.newDir
				if keep && readOnly {
					continue // the write itself fails: nothing to keep
				}
				// No "=" in the name: the temporary directories take it,
				// and -javaagent:PATH=OPTIONS would cut the path there.
				t.Run(fmt.Sprintf("%s/%s/%s", tc.name, backend, map[bool]string{false: "disarm", true: "kept"}[keep]), func(t *testing.T) {
					t.Parallel()
					hostProgram(t, tc.tool)
					e := newEnv(t)
					if backend == "landlock" {
						requireLandlock(t)
					}
					marker := filepath.Join(e.root, "MARKER-RAN")
					env := tc.setup(t, e, marker)
					flags := []string{"--backend", backend}
					if keep {
						flags = append(flags, "--no-disarm")
					}
					r := e.sh(strings.ReplaceAll(tc.plant, "MARKER", marker), flags...)
					if _, err := os.Stat(marker); err == nil {
						t.Fatalf("the marker exists before the host command ran:\n%s", r)
					}
					if readOnly != (r.code != 0) {
						t.Fatalf("run, want it to fail=%v (the file read-only):\n%s", readOnly, r)
					}
					warnings := warningLines(r.stderr)
					if !readOnly && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warn)) {
						t.Fatalf("want one warning naming %s: %q\n%s", tc.warn, warnings, r)
					}
					out := hostTool(t, e, e.ws, env, tc.host[0], tc.host[1:]...)
					_, err := os.Stat(marker)
					if ran := err == nil; ran != keep {
						t.Errorf("host %q with --no-disarm=%v ran the planted program: %v\n%s", tc.host, keep, ran, out)
					}
					if tc.tool == "npm" && !strings.Contains(out, "LINT-OK") {
						t.Errorf("npm run lint did not run the script:\n%s", out)
					}
					if !readOnly {
						log := readFile(t, filepath.Join(e.home, ".local", "state", "cordon", "audit.jsonl"))
						if !strings.Contains(log, `"rule":"planted:`) {
							t.Errorf("no audit record of the planted file:\n%s", log)
						}
					}
				})
			}
		}
	}
}

// agentMarkerVar names the file the Java agent of javaAgent creates.
const agentMarkerVar = "CORDON_TEST_AGENT_MARKER"

// agentJar is the Java agent's jar, compiled once per test binary (javac
// costs seconds of CPU): its bytes, or why it could not be made.
var agentJar struct {
	once  sync.Once
	bytes []byte
	err   string
}

// javaAgent writes at path a jar of a Java agent whose premain creates the
// file $CORDON_TEST_AGENT_MARKER names; without javac the test skips
// (fails under CI=true).
func javaAgent(t *testing.T, path string) {
	t.Helper()
	javac := hostProgram(t, "javac")
	agentJar.once.Do(func() {
		dir, err := os.MkdirTemp("", "cordon-itest-agent-")
		if err != nil {
			agentJar.err = err.Error()
			return
		}
		defer os.RemoveAll(dir)
		src := fmt.Sprintf("public class Agent { public static void premain(String a) throws Exception { String m = System.getenv(%q); if (m != null) new java.io.File(m).createNewFile(); } }\n", agentMarkerVar)
		if err := os.WriteFile(filepath.Join(dir, "Agent.java"), []byte(src), 0o644); err != nil {
			agentJar.err = err.Error()
			return
		}
		if out, err := exec.Command(javac, "-d", dir, filepath.Join(dir, "Agent.java")).CombinedOutput(); err != nil {
			agentJar.err = fmt.Sprintf("javac: %v\n%s", err, out)
			return
		}
		class, err := os.ReadFile(filepath.Join(dir, "Agent.class"))
		if err != nil {
			agentJar.err = err.Error()
			return
		}
		jar := filepath.Join(dir, "agent.jar")
		writeZip(t, jar, map[string]string{
			"META-INF/MANIFEST.MF": "Manifest-Version: 1.0\nPremain-Class: Agent\n\n",
			"Agent.class":          string(class),
		})
		agentJar.bytes, _ = os.ReadFile(jar)
	})
	if agentJar.bytes == nil {
		t.Fatalf("making the Java agent: %s", agentJar.err)
	}
	writeFile(t, path, string(agentJar.bytes))
}

// writeZip writes a zip archive of files at path.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pthWheel is a wheel of cordon-pth 1.0: a module and a .pth file that
// imports it at every start of python, both listed in its RECORD, as
// editable installs and coverage tools ship them.
func pthWheel(t *testing.T, path string) {
	t.Helper()
	files := map[string]string{
		"cordon_pth.py":                     "VALUE = 7\n",
		"cordon_pth.pth":                    "import cordon_pth\n",
		"cordon_pth-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: cordon-pth\nVersion: 1.0\n",
		"cordon_pth-1.0.dist-info/WHEEL":    "Wheel-Version: 1.0\nGenerator: cordon-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	var record strings.Builder
	for _, n := range []string{"cordon_pth.py", "cordon_pth.pth", "cordon_pth-1.0.dist-info/METADATA", "cordon_pth-1.0.dist-info/WHEEL"} {
		sum := sha256.Sum256([]byte(files[n]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", n, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[n]))
	}
	record.WriteString("cordon_pth-1.0.dist-info/RECORD,,\n")
	files["cordon_pth-1.0.dist-info/RECORD"] = record.String()
	writeZip(t, path, files)
}

// hostVenv makes the virtual environment ws/.venv on the host, served by
// the system's pip, as the user had it before the run, and returns its
// site-packages.
func hostVenv(t *testing.T, e *sandboxEnv) string {
	t.Helper()
	py := hostProgram(t, "python3")
	// The system's pip serves the environment (python -m pip installs
	// into it): a pip of its own (ensurepip) costs seconds of CPU a venv.
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", "--system-site-packages", filepath.Join(e.ws, ".venv")).CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("python3 -m venv (apt-get install python3-venv): %v\n%s", err, out))
	}
	sp, _ := filepath.Glob(filepath.Join(e.ws, ".venv", "lib", "python*", "site-packages"))
	if len(sp) != 1 {
		t.Fatalf("site-packages: %q", sp)
	}
	return sp[0]
}

// TestVenvPlantsDoNotRun: in a virtual environment that existed before the
// run, a .pth file with an import line and a line appended to bin/activate
// do not run on the host after the run (the environment's python starts,
// the activate script is sourced: no marker), and cordon warns about each;
// with --no-disarm both stay and run. pip install of a wheel whose .pth its
// RECORD lists works inside and is not reported. Both backends.
func TestVenvPlantsDoNotRun(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"bwrap", "landlock"} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s", backend, map[bool]string{false: "disarm", true: "kept"}[keep]), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				if backend == "landlock" {
					requireLandlock(t)
				}
				sp := hostVenv(t, e)
				spRel, _ := filepath.Rel(e.ws, sp)
				activate := filepath.Join(e.ws, ".venv", "bin", "activate")
				orig := readFile(t, activate)
				pthWheel(t, filepath.Join(e.ws, "cordon_pth-1.0-py3-none-any.whl"))
				flags := []string{"--backend", backend}
				if keep {
					flags = append(flags, "--no-disarm")
				}
				// pip as the project uses it: no warning.
				r := e.sh(`.venv/bin/python -m pip install -q --no-index --no-deps --no-cache-dir --disable-pip-version-check ./cordon_pth-1.0-py3-none-any.whl && .venv/bin/python -c 'import cordon_pth, sys; print("PIP-OK", cordon_pth.VALUE)'`, flags...)
				if r.code != 0 || !strings.Contains(r.stdout, "PIP-OK 7") {
					t.Fatalf("pip install into the environment:\n%s", r)
				}
				if w := warningLines(r.stderr); len(w) != 0 {
					t.Fatalf("pip's own .pth is reported: %q", w)
				}
				pthMarker, actMarker := filepath.Join(e.root, "PTH-RAN"), filepath.Join(e.root, "ACTIVATE-RAN")
				plant := fmt.Sprintf(`echo "import os; open('%s', 'w')" > %s/evil.pth && echo ": > '%s'" >> .venv/bin/activate`, pthMarker, spRel, actMarker)
				r = e.sh(plant, flags...)
				if r.code != 0 {
					t.Fatalf("run: %s", r)
				}
				w := warningLines(r.stderr)
				if len(w) != 2 || !strings.Contains(r.stderr, "evil.pth") || !strings.Contains(r.stderr, ".venv/bin/activate") {
					t.Fatalf("want two warnings, the .pth and activate: %q\n%s", w, r)
				}
				if _, err := os.Stat(pthMarker); err == nil {
					t.Fatal("the .pth ran before the host did anything")
				}
				// The host, as the user goes on: the environment's python
				// (pytest, pip, the editor) and the activate script.
				hostTool(t, e, e.ws, nil, filepath.Join(e.ws, ".venv", "bin", "python"), "-c", "import cordon_pth")
				hostTool(t, e, e.ws, nil, "sh", "-c", ". .venv/bin/activate")
				for _, m := range []string{pthMarker, actMarker} {
					_, err := os.Stat(m)
					if ran := err == nil; ran != keep {
						t.Errorf("%s: planted code ran on the host=%v with --no-disarm=%v", filepath.Base(m), ran, keep)
					}
				}
				if !keep && readFile(t, activate) != orig {
					t.Errorf("bin/activate is not the user's own after the run")
				}
				if !exists(filepath.Join(sp, "cordon_pth.pth")) {
					t.Errorf("pip's .pth was removed")
				}
				log := readFile(t, filepath.Join(e.home, ".local", "state", "cordon", "audit.jsonl"))
				if !strings.Contains(log, `"rule":"toolfile:**/site-packages/*.pth"`) || !strings.Contains(log, `"rule":"toolfile:**/bin/activate"`) {
					t.Errorf("audit log lacks the records:\n%s", log)
				}
			})
		}
	}
}

// TestToolsWorkInside: with the project's tool files present (and so
// read-only), the routine commands still work inside: npm install of a
// local tarball, cargo build offline, mvn -v and mvn -o.
func TestToolsWorkInside(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, tool string
		setup      func(t *testing.T, e *sandboxEnv)
		script     string
		want       string
	}{
		{"npm", "npm", func(t *testing.T, e *sandboxEnv) {
			// An installed package's own tool files (a React Native
			// library's android/gradle.properties) are not protected:
			// npm replaces and removes them.
			writeFile(t, filepath.Join(e.ws, "node_modules", "old-lib", "android", "gradle.properties"), "android.useAndroidX=true\n")
			writeFile(t, filepath.Join(e.ws, "node_modules", "old-lib", ".pre-commit-config.yaml"), "repos: []\n")
			writeFile(t, filepath.Join(e.ws, ".npmrc"), "fund=false\naudit=false\nupdate-notifier=false\n")
			writeFile(t, filepath.Join(e.ws, "package.json"), `{"name":"p","version":"1.0.0"}`)
			if err := os.WriteFile(filepath.Join(e.ws, "pad.tgz"), npmTarball(t, "cordon-pad", "module.exports = s => '[' + s + ']';\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, `rm -rf node_modules && npm install --cache "$TMPDIR/npm" ./pad.tgz >/dev/null && mkdir -p node_modules/cordon-pad/android && echo x=1 > node_modules/cordon-pad/android/gradle.properties && node -e 'console.log(require("cordon-pad")("NPM-OK"))'`, "[NPM-OK]"},
		{"cargo", "cargo", func(t *testing.T, e *sandboxEnv) {
			writeFile(t, filepath.Join(e.ws, ".cargo", "config.toml"), "[build]\nincremental = false\n")
			writeFile(t, filepath.Join(e.ws, "Cargo.toml"), "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n")
			writeFile(t, filepath.Join(e.ws, "src", "main.rs"), "fn main() { println!(\"CARGO-OK\"); }\n")
		}, `CARGO_HOME="$TMPDIR/cargo" cargo build -q --offline && ./target/debug/p`, "CARGO-OK"},
		{"maven", "mvn", func(t *testing.T, e *sandboxEnv) {
			writeFile(t, filepath.Join(e.ws, ".mvn", "jvm.config"), "-Xmx256m\n")
			writeFile(t, filepath.Join(e.ws, ".mvn", "maven.config"), "-B\n")
		}, `mvn -v >/dev/null && mvn -o -v >/dev/null && echo MVN-OK`, "MVN-OK"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hostProgram(t, tc.tool)
			e := newEnv(t)
			tc.setup(t, e)
			r := e.sh(tc.script)
			if r.code != 0 || !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("%s inside: %s", tc.name, r)
			}
			if w := warningLines(r.stderr); len(w) != 0 {
				t.Errorf("warnings: %q", w)
			}
		})
	}
}

// TestHomeStartupFilesRefused: with the home directory writable
// (--allow-write ~), every entry of policy.HomeProtected stays as it was:
// an existing one keeps its content, a missing one is not created (as a
// file, or as a directory with a file in it), and nothing is left behind.
func TestHomeStartupFilesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	existing := map[string]string{".mavenrc": "# mine\n", ".exrc": "\" mine\n", filepath.Join(".config", "nvim", "init.vim"): "\" mine\n",
		filepath.Join(".gradle", "init.d", "mine.gradle"): "// mine\n", filepath.Join(".m2", "settings.xml"): "<settings/>\n"}
	for rel, body := range existing {
		writeFile(t, filepath.Join(e.home, rel), body)
	}
	skip := []string{".cache", filepath.Join(".local", "state", "cordon")}
	before := listing(t, e.home, skip...)
	var paths []string
	var script strings.Builder
	// The start-up files that the shells, editors and build tools of
	// policy.ToolFiles read from the home, whether or not HomeProtected
	// lists them, and then all it lists.
	required := []string{".mavenrc", ".m2/settings.xml", ".exrc", ".nvimrc", ".vimrc", ".config/nvim", ".gradle/init.d",
		".gradle/init.gradle", ".gradle/init.gradle.kts", ".ssh/config", ".npmrc", ".yarnrc", ".yarnrc.yml", ".bunfig.toml",
		".config/mise", ".tool-versions", ".docker/config.json", ".kube/config", ".config/gh/config.yml", ".inputrc",
		".config/fish", ".bashrc", ".zshrc", ".profile", ".cargo/config.toml", ".config/git", ".gitconfig"}
	all := slices.Clone(policy.HomeProtected)
	for _, r := range required {
		all = append(all, "${HOME}/"+r)
	}
	for _, h := range all {
		p := strings.ReplaceAll(h, "${HOME}", e.home)
		paths = append(paths, p)
		fmt.Fprintf(&script, "(mkdir -p '%[1]s' && echo PLANTED > '%[1]s/x') 2>/dev/null; (mkdir -p \"$(dirname '%[1]s')\" && echo PLANTED >> '%[1]s') 2>/dev/null; ", p)
	}
	script.WriteString("echo DONE")
	r := e.sh(script.String(), "--allow-write", e.home)
	if r.code != 0 || !strings.Contains(r.stdout, "DONE") {
		t.Fatalf("run: %s", r)
	}
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "PLANTED") {
			t.Errorf("%s was written", p)
		}
		if exists(filepath.Join(p, "x")) {
			t.Errorf("%s/x was created", p)
		}
	}
	for rel, body := range existing {
		if got := readFile(t, filepath.Join(e.home, rel)); got != body {
			t.Errorf("~/%s changed: %q", rel, got)
		}
	}
	if d := diffListing(before, listing(t, e.home, skip...)); d != "" {
		t.Errorf("the home directory changed (or a placeholder was left):\n%s", d)
	}
	// The home stays writable for everything else.
	if r := e.sh(`echo ok > ~/notes.txt`, "--allow-write", e.home); r.code != 0 || !exists(filepath.Join(e.home, "notes.txt")) {
		t.Errorf("writing ~/notes.txt: %s", r)
	}
}

// TestRenamedParentReplant: under bubblewrap a nested repository, a
// .cargo/config.toml and an .envrc that existed are read-only, but the
// directory above each can be renamed (the mounts go along) and a new
// one made at the old path. The check after the run does not take the new
// one for the one it kept read-only: the hook is disarmed (git on the host
// runs nothing) and the tool files are renamed aside.
func TestRenamedParentReplant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustGit(e.ws, "init", "-q", "sub")
	writeFile(t, filepath.Join(e.ws, "s", ".cargo", "config.toml"), "[build]\n")
	writeFile(t, filepath.Join(e.ws, "d", ".envrc"), "export A=1\n")
	marker := filepath.Join(e.root, "HOOK-RAN")
	r := e.sh(fmt.Sprintf(`mv sub sub.old && git init -q sub && printf '#!/bin/sh\n: > %s\n' > sub/.git/hooks/pre-commit && chmod +x sub/.git/hooks/pre-commit &&
mv s s.old && mkdir -p s/.cargo && echo '[build]' > s/.cargo/config.toml && echo 'rustc-wrapper = "/bin/evil"' >> s/.cargo/config.toml &&
mv d d.old && mkdir d && echo 'touch /tmp/evil' > d/.envrc`, marker), "--backend", "bwrap")
	if r.code != 0 {
		t.Fatalf("run: %s", r)
	}
	for _, w := range []string{"sub/.git/hooks/pre-commit", "s/.cargo/config.toml", "d/.envrc"} {
		if !strings.Contains(r.stderr, "planted "+w) && !strings.Contains(r.stderr, "planted git hook "+w) {
			t.Errorf("no warning for %s:\n%s", w, r.stderr)
		}
	}
	for _, p := range []string{"s/.cargo/config.toml", "d/.envrc"} {
		if exists(filepath.Join(e.ws, p)) {
			t.Errorf("%s is still in place", p)
		}
	}
	repo := filepath.Join(e.ws, "sub")
	writeFile(t, filepath.Join(repo, "f"), "x\n")
	hostGit(t, e, repo, "add", "f")
	hostGit(t, e, repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "-m", "m")
	if exists(marker) {
		t.Errorf("the planted hook ran on the host")
	}
}

// TestOtherAgentsFiles: the project files through which other coding
// agents start MCP servers and commands (found by an attack: a run could
// leave them for the next session of Roo Code, Kiro, Amazon Q, Continue,
// Qwen Code, opencode, Crush or aider) are renamed aside after a run that
// creates them, one warning each (the Landlock-only backend refuses one
// in a directory that existed at once), and an existing one is read-only
// during the run, on both backends.
func TestOtherAgentsFiles(t *testing.T) {
	t.Parallel()
	files := []string{".roo/mcp.json", ".kiro/settings/mcp.json", ".amazonq/mcp.json", ".continue/mcpServers/x.yaml",
		".qwen/settings.json", "opencode.json", "opencode.jsonc", ".opencode/plugin/p.ts", "crush.json", ".crush.json",
		".aider.conf.yml", "sub/opencode.json"}
	eachBackend(t, func(t *testing.T, e *sandboxEnv, backend string) {
		writeFile(t, filepath.Join(e.ws, "existing", "opencode.json"), "{}\n")
		var script strings.Builder
		for _, f := range files {
			fmt.Fprintf(&script, "mkdir -p %s && echo '{\"mcp\":{}}' > %s; ", filepath.Dir(f), f)
		}
		script.WriteString("echo planted > existing/opencode.json || echo REFUSED")
		r := e.sh(script.String(), "--backend", backend)
		for _, f := range files {
			if exists(filepath.Join(e.ws, f)) {
				t.Errorf("%s is left where its agent reads it: %s", f, r)
			}
			// The Landlock-only backend's supervisor refuses the name at
			// once in a directory that existed; what a new directory holds
			// is found after the run.
			warned := f // a directory's row names the directory
			if d, _, ok := strings.Cut(f, "/"); ok && d != "sub" {
				warned = d
			}
			if (backend == "bwrap" || strings.HasPrefix(f, "sub/")) && !strings.Contains(r.stderr, "planted "+warned+" ") {
				t.Errorf("no warning names %s: %s", warned, r)
			}
		}
		if got := readFile(t, filepath.Join(e.ws, "existing", "opencode.json")); got != "{}\n" || !strings.Contains(r.stdout, "REFUSED") {
			t.Errorf("an existing opencode.json was written: %q\n%s", got, r)
		}
	})
}
