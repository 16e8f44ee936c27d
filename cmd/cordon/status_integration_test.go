//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// statusLine is one line of cordon status: a feature, or an area of what
// cordon enforces (with the degraded lines below it).
type statusLine struct {
	Name, Status, Detail string
	Degraded             []string
}

// statusRemedy is one remedy of cordon status.
type statusRemedy struct {
	Feature, Problem, Fix string
}

// statusText is cordon status's text, parsed.
type statusText struct {
	header   string
	features []statusLine
	remedies []statusRemedy
	enforced []statusLine
	binaries []string // "ROLE: PATH (ok)" or "ROLE: PATH WHAT IS WRONG"
}

// columns splits an aligned line into its columns (two spaces or more
// apart; details never hold two spaces in a row).
var columns = regexp.MustCompile(`\s{2,}`)

func parseStatusText(t *testing.T, out string) statusText {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	st := statusText{header: lines[0]}
	section := "features"
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		switch {
		case l == "Remedies:":
			section = "remedies"
			continue
		case strings.HasPrefix(l, "Enforced by cordon "):
			section = "enforced"
			continue
		case l == "Binaries beside cordon:":
			section = "binaries"
			continue
		}
		switch section {
		case "features":
			c := columns.Split(strings.TrimSpace(l), 3)
			for len(c) < 3 {
				c = append(c, "")
			}
			st.features = append(st.features, statusLine{Name: c[0], Status: c[1], Detail: c[2]})
		case "remedies":
			feature, problem, _ := strings.Cut(strings.TrimSpace(l), ": ")
			fix, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "fix: ")
			if !ok {
				t.Fatalf("remedy without a fix line: %q", lines[i:i+2])
			}
			st.remedies = append(st.remedies, statusRemedy{feature, problem, fix})
			i++
		case "enforced":
			c := columns.Split(strings.TrimSpace(l), 3)
			if strings.HasPrefix(l, "     ") { // a degraded line under the area
				if c[0] != "degraded" || len(st.enforced) == 0 {
					t.Fatalf("stray line under Enforced: %q", l)
				}
				last := &st.enforced[len(st.enforced)-1]
				last.Degraded = append(last.Degraded, c[1])
				continue
			}
			st.enforced = append(st.enforced, statusLine{Name: c[0], Status: c[1], Detail: c[2]})
		case "binaries":
			st.binaries = append(st.binaries, strings.TrimSpace(l))
		}
	}
	return st
}

// statusJSON is what the test reads of cordon status --json.
type statusJSON struct {
	Kernel   string `json:"kernel"`
	Root     bool   `json:"root"`
	Landlock struct {
		ABI int `json:"abi"`
	} `json:"landlock"`
	Bwrap struct {
		Path string `json:"path"`
	} `json:"bwrap"`
	NoNewPrivsInherited bool `json:"no_new_privs_inherited"`
	Limits              struct {
		Mechanism string `json:"mechanism"`
		Reason    string `json:"reason"`
	} `json:"limits"`
	Systemd     bool   `json:"systemd"`
	SystemdUser bool   `json:"systemd_user"`
	AutoBackend string `json:"auto_backend"`
	Features    []struct {
		Name, Status, Detail string
	} `json:"features"`
	Remedies []statusRemedy `json:"remedies"`
	Enforced []struct {
		Area, Status, Detail string
		Degraded             []string
	} `json:"enforced"`
	Binaries []struct {
		Name, Role, Path, Error string
	} `json:"binaries"`
}

// TestStatusOneStory: cordon status tells one story. Every line of the
// text is in --json, equal, and nothing else is; the raw findings in the
// JSON agree with the lines; the remedies fit this host; what a run then
// does is what status says (the backend, the cgroup that holds the
// limits, no_new_privs, the audit record of a planted file); and the
// docs/security.md's table has the same areas, with this host's states among those
// it names.
func TestStatusOneStory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tr, jr := e.run("status"), e.run("status", "--json")
	if tr.code != 0 || jr.code != 0 {
		t.Fatalf("cordon status: %s\n--json: %s", tr, jr)
	}
	text := parseStatusText(t, tr.stdout)
	var js statusJSON
	if err := json.Unmarshal([]byte(jr.stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, jr.stdout)
	}

	t.Run("text equals json", func(t *testing.T) {
		var features, enforced []statusLine
		for _, f := range js.Features {
			features = append(features, statusLine{Name: f.Name, Status: f.Status, Detail: strings.Join(strings.Fields(f.Detail), " ")})
		}
		for _, a := range js.Enforced {
			enforced = append(enforced, statusLine{Name: a.Area, Status: a.Status, Detail: a.Detail, Degraded: a.Degraded})
		}
		if !reflect.DeepEqual(text.features, features) {
			t.Errorf("features differ:\ntext %+v\njson %+v", text.features, features)
		}
		if !reflect.DeepEqual(text.enforced, enforced) {
			t.Errorf("enforced differs:\ntext %+v\njson %+v", text.enforced, enforced)
		}
		var binaries []string
		for _, b := range js.Binaries {
			state := "(ok)"
			if b.Error != "" {
				state = b.Error
			}
			binaries = append(binaries, b.Role+": "+b.Path+" "+state)
		}
		if !reflect.DeepEqual(text.binaries, binaries) || len(binaries) != 2 {
			t.Errorf("binaries differ:\ntext %q\njson %q", text.binaries, binaries)
		}
		if len(text.remedies) != len(js.Remedies) || len(js.Remedies) > 0 && !reflect.DeepEqual(text.remedies, js.Remedies) {
			t.Errorf("remedies differ:\ntext %+v\njson %+v", text.remedies, js.Remedies)
		}
		if !strings.Contains(text.header, "kernel "+js.Kernel) || strings.Contains(text.header, "(running as root)") != js.Root || js.Root != isRoot() {
			t.Errorf("header %q, json kernel %q root %v", text.header, js.Kernel, js.Root)
		}
	})

	feature := map[string]statusLine{}
	for _, f := range text.features {
		feature[f.Name] = f
	}
	area := map[string]statusLine{}
	for _, a := range text.enforced {
		area[a.Name] = a
	}
	cgroup := js.Limits.Mechanism == "cgroup1" || js.Limits.Mechanism == "cgroup2"

	t.Run("lines agree with the findings", func(t *testing.T) {
		for _, c := range []struct {
			what string
			ok   bool
		}{
			{"backend line is auto_backend", feature["backend (auto)"].Status == js.AutoBackend},
			{"landlock line names the ABI", js.Landlock.ABI == 0 || strings.Contains(feature["landlock"].Detail, fmt.Sprintf("ABI %d", js.Landlock.ABI))},
			{"bubblewrap line names bwrap.path", js.Bwrap.Path == "" || strings.Contains(feature["bubblewrap"].Detail, js.Bwrap.Path)},
			{"no_new_privs is ok", feature["no_new_privs"].Status == "ok"},
			{"no_new_privs says inherited only if so", strings.Contains(feature["no_new_privs"].Detail, "already set") == js.NoNewPrivsInherited},
			{"limits.mechanism is known", cgroup || js.Limits.Mechanism == "rlimits" && js.Limits.Reason != ""},
			{"cgroups line is ok exactly with a cgroup", (feature["cgroups"].Status == "ok") == cgroup},
			{"resource limits enforced exactly with a cgroup", (area["resource limits"].Status == "enforced") == cgroup},
			{"resource limits names the mechanism", !cgroup || strings.HasPrefix(area["resource limits"].Detail, js.Limits.Mechanism+":")},
			{"no rlimits story beside a cgroup", !cgroup || !strings.Contains(tr.stdout, "use rlimits") && !strings.Contains(tr.stdout, "rlimits only")},
			{"the audit line says run records planted files", strings.Contains(area["audit log"].Detail, "cordon run and run_command every file a run planted")},
		} {
			if !c.ok {
				t.Errorf("%s:\n%s\n%s", c.what, tr.stdout, jr.stdout)
			}
		}
		remedied := map[string]bool{}
		for _, rm := range text.remedies {
			remedied[rm.Feature] = true
			if strings.Contains(rm.Fix, "systemd-run") && !js.Systemd {
				t.Errorf("remedy suggests systemd-run, but systemd is not the init system here: %+v", rm)
			}
			if strings.Contains(rm.Fix, "systemd-run --user") && !js.SystemdUser && !strings.Contains(rm.Fix, "enable-linger") {
				t.Errorf("remedy suggests systemd-run --user, but this user has no systemd manager: %+v", rm)
			}
		}
		for _, f := range text.features {
			if bad := f.Status == "missing" || f.Status == "degraded"; bad != remedied[f.Name] {
				t.Errorf("feature %+v: remedy %v", f, remedied[f.Name])
			}
		}
	})

	t.Run("a run does what status says", func(t *testing.T) {
		jf := jsonOut(t)
		r := e.run("run", "--json-out", jf, "--max-procs", "200", "--max-memory", "512", "--", "sh", "-c", "grep NoNewPrivs /proc/self/status")
		res := readJSON(t, jf, r)
		if r.code != 0 || res.Backend != js.AutoBackend {
			t.Errorf("run on backend %q, status says %q: %s", res.Backend, js.AutoBackend, r)
		}
		want := js.Limits.Mechanism
		if want == "rlimits" {
			want = ""
		}
		if res.Usage.Cgroup != want {
			t.Errorf("the run's limits were held by %q, status says %q", res.Usage.Cgroup, js.Limits.Mechanism)
		}
		if !regexp.MustCompile(`NoNewPrivs:\s+1`).MatchString(r.stdout) {
			t.Errorf("no_new_privs is not set for the command: %s", r)
		}
		// The audit line: a planted file is recorded.
		if r := e.sh(`git init -q new && git -C new config core.fsmonitor "echo x"`); r.code != 0 {
			t.Fatalf("planting: %s", r)
		}
		if log := readFile(t, filepath.Join(e.home, ".local", "state", "cordon", "audit.jsonl")); !strings.Contains(log, `"rule":"planted:core.fsmonitor"`) {
			t.Errorf("status says run records planted files, the audit log has:\n%s", log)
		}
	})

	t.Run("security model", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
		if err != nil {
			t.Fatal(err)
		}
		rows := readmeTable(string(b), "## What is enforced today")
		if len(rows) == 0 {
			t.Fatal("docs/security.md has no table under \"## What is enforced today\"")
		}
		paren := regexp.MustCompile(`\s*\(.*\)$`)
		states := map[string]string{}
		for _, row := range rows {
			states[strings.ToLower(paren.ReplaceAllString(row[0], ""))] = row[len(row)-1]
		}
		for _, a := range text.enforced {
			state, ok := states[a.Name]
			if !ok {
				t.Errorf("docs/security.md's table has no row for %q (rows: %q)", a.Name, rows)
				continue
			}
			if !strings.Contains(state, a.Status) {
				t.Errorf("docs/security.md says %q is %q; cordon status says %q here", a.Name, state, a.Status)
			}
			delete(states, a.Name)
		}
		for name := range states {
			t.Errorf("docs/security.md's table has a row %q that cordon status does not print", name)
		}
	})
}

// readmeTable returns the cells of the first table after heading.
func readmeTable(doc, heading string) [][]string {
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	var rows [][]string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if cells[0] == "area" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}
