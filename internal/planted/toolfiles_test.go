package planted

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// realVenv makes a virtual environment at ws/.venv with the host's
// python3 and returns its site-packages; without python3 and its venv
// module the test skips (fails under CI=true).
func realVenv(t *testing.T, ws string) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err == nil {
		var out []byte
		if out, err = exec.Command(py, "-m", "venv", "--without-pip", filepath.Join(ws, ".venv")).CombinedOutput(); err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
	}
	if err != nil {
		testenv.SkipOrFail(t, "python3 -m venv: %v", err)
	}
	sp, _ := filepath.Glob(filepath.Join(ws, ".venv", "lib", "python*", "site-packages"))
	if len(sp) != 1 {
		t.Fatalf("site-packages of the new environment: %q", sp)
	}
	return sp[0]
}

// distInfo installs, as pip would, a distribution whose RECORD lists files
// (name relative to site-packages, content) with their hashes.
func distInfo(t *testing.T, sp, dist string, files map[string]string) {
	t.Helper()
	var rec strings.Builder
	for name, body := range files {
		write(t, filepath.Join(sp, name), body, 0o644)
		sum := sha256.Sum256([]byte(body))
		fmt.Fprintf(&rec, "%s,sha256=%s,%d\n", name, base64.RawURLEncoding.EncodeToString(sum[:]), len(body))
	}
	write(t, filepath.Join(sp, dist+".dist-info", "RECORD"), rec.String(), 0o644)
}

// TestCheckVenv: in an existing virtual environment, a .pth with an
// import line and a sitecustomize.py that no RECORD lists are renamed
// aside, a line appended to bin/activate is undone (the version from
// before the run is back), a .pth that a RECORD lists as it is stays,
// a .pth of paths only stays, and a changed pyvenv.cfg is reported; the
// environment's python then runs nothing planted.
func TestCheckVenv(t *testing.T) {
	ws := newWorkspace(t)
	sp := realVenv(t, ws)
	activate := filepath.Join(ws, ".venv", "bin", "activate")
	orig := read(t, activate)
	marker := filepath.Join(t.TempDir(), "ran")
	b := snapshotOf(t, ws).WithVenvs([]string{ws})

	write(t, filepath.Join(sp, "evil.pth"), "import os; open("+fmt.Sprintf("%q", marker)+", 'w')\n", 0o644)
	write(t, filepath.Join(sp, "sitecustomize.py"), "open("+fmt.Sprintf("%q", marker)+", 'w')\n", 0o644)
	write(t, filepath.Join(sp, "paths.pth"), "/opt/somewhere\n", 0o644)
	distInfo(t, sp, "good-1.0", map[string]string{"good.pth": "import sys\n"})
	// A RECORD that lists a file with another hash does not vouch for it.
	distInfo(t, sp, "liar-1.0", map[string]string{"liar.pth": "import sys\n"})
	write(t, filepath.Join(sp, "liar.pth"), "import os; open("+fmt.Sprintf("%q", marker)+", 'w')\n", 0o644)
	f, err := os.OpenFile(activate, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("touch " + marker + "\n")
	must(t, err)
	must(t, f.Close())
	cfg := filepath.Join(ws, ".venv", "pyvenv.cfg")
	write(t, cfg, read(t, cfg)+"home = /tmp/elsewhere\n", 0o644)

	rep, err := b.Check([]string{ws}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, fmt.Sprintf("%s %s %v", f.Kind, filepath.Base(f.Rel), f.Disarmed))
		if w := f.Warning(); strings.ContainsAny(w, "\n") || w == "" {
			t.Errorf("warning %q", w)
		}
	}
	want := []string{"toolfile activate true", "toolfile evil.pth true", "toolfile liar.pth true", "toolfile sitecustomize.py true", "toolfile pyvenv.cfg false"}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %q, want %q\n%v", got, want, rep.Findings)
	}
	if w := rep.Findings[1].Warning(); !strings.Contains(w, "import os; open(") || !strings.Contains(w, "evil.pth.cordon-disarmed") {
		t.Errorf("the .pth warning names neither the line nor what was done: %q", w)
	}
	if w := rep.Findings[0].Warning(); !strings.Contains(w, "touch "+marker) || !strings.Contains(w, "restored") {
		t.Errorf("the activate warning names neither the change nor the restore: %q", w)
	}
	if read(t, activate) != orig {
		t.Errorf("bin/activate is not the version from before the run")
	}
	for _, p := range []string{"good.pth", "paths.pth", "evil.pth.cordon-disarmed", "sitecustomize.py.cordon-disarmed"} {
		if _, err := os.Lstat(filepath.Join(sp, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	// The environment's python and its activate script, as the user runs
	// them next.
	py := filepath.Join(ws, ".venv", "bin", "python")
	if out, err := exec.Command(py, "-c", "pass").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", py, err, out)
	}
	if out, err := exec.Command("sh", "-c", ". "+activate).CombinedOutput(); err != nil {
		t.Fatalf("sourcing activate: %v: %s", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("planted code ran on the host after the check")
	}
	// A second check finds nothing new.
	rep, _ = snapshotOf(t, ws).WithVenvs([]string{ws}).Check([]string{ws}, Options{})
	if len(rep.Findings) != 0 {
		t.Errorf("a second run reports %v", summary(rep))
	}
}

// TestCheckVenvNewAndKeep: a new environment's own files are not
// reported; --no-disarm reports and leaves a planted .pth in place.
func TestCheckVenvNewAndKeep(t *testing.T) {
	ws := newWorkspace(t)
	b := snapshotOf(t, ws).WithVenvs([]string{ws})
	sp := realVenv(t, ws)
	rep, _ := b.Check([]string{ws}, Options{})
	if len(rep.Findings) != 0 {
		t.Fatalf("a new environment is reported: %v", rep.Findings)
	}
	b = snapshotOf(t, ws).WithVenvs([]string{ws})
	write(t, filepath.Join(sp, "x.pth"), "import os\n", 0o644)
	rep, _ = b.Check([]string{ws}, Options{KeepArmed: true})
	if len(rep.Findings) != 1 || rep.Findings[0].Disarmed {
		t.Fatalf("findings %v", rep.Findings)
	}
	if _, err := os.Lstat(filepath.Join(sp, "x.pth")); err != nil {
		t.Error(err)
	}
}

// TestRecordQuotedPath: a RECORD line for a path with a comma quotes it
// (csv), and the check still finds it.
func TestRecordQuotedPath(t *testing.T) {
	ws := newWorkspace(t)
	sp := filepath.Join(ws, "sp")
	body := "import sys\n"
	sum := sha256.Sum256([]byte(body))
	write(t, filepath.Join(sp, "a,b.pth"), body, 0o644)
	write(t, filepath.Join(sp, "d-1.dist-info", "RECORD"), fmt.Sprintf("%q,sha256=%s,%d\n", "a,b.pth", base64.RawURLEncoding.EncodeToString(sum[:]), len(body)), 0o644)
	r, err := os.OpenRoot(ws)
	must(t, err)
	defer r.Close()
	if !listedInRecord(r, "sp", "a,b.pth", []byte(body), map[string]map[string]string{}) {
		t.Error("a quoted RECORD path is not found")
	}
}
