//go:build linux

package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/backend"
	"github.com/cordon-sandbox/cordon/internal/plan"
	"github.com/cordon-sandbox/cordon/policy"
)

// TestHostFacts: what plan.Build is told about the host: a configured
// bwrap that is not there is an error saying how to install it, which
// Build then refuses with; an auto policy gets a backend or the reason
// there is none; mode off looks at nothing.
func TestHostFacts(t *testing.T) {
	dir := t.TempDir()
	p := &policy.Policy{Mode: policy.ModeStandard, Backend: backend.Bwrap, BwrapPath: filepath.Join(dir, "no", "bwrap"),
		Workspace: dir, Read: []string{dir}, Write: []string{dir}}
	h := HostFacts(p, SelfHelper)
	if h.BwrapErr == nil || !strings.Contains(h.BwrapErr.Error(), "apt-get install bubblewrap") || h.Bwrap != "" {
		t.Errorf("bwrap %q, error %v; want the install hint", h.Bwrap, h.BwrapErr)
	}
	if h.Auto != "" || h.AutoErr != nil {
		t.Errorf("an explicit backend was chosen automatically: %q, %v", h.Auto, h.AutoErr)
	}
	_, err := plan.Build(p, []string{"true"}, plan.Options{Home: dir, Cwd: dir, StateDir: filepath.Join(dir, "state"), Host: h})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("Build with no bwrap: %v", err)
	}

	p.Backend = backend.Auto
	h = HostFacts(p, SelfHelper)
	switch {
	case h.AutoErr != nil:
		if h.Auto != backend.None || !strings.Contains(h.AutoErr.Error(), "no sandbox backend works here") {
			t.Errorf("auto: %q, %v", h.Auto, h.AutoErr)
		}
	case h.Auto != backend.Landlock:
		// bwrap is not found at the configured path, so auto cannot
		// pick it.
		t.Errorf("auto with no bwrap picked %q", h.Auto)
	}

	p.Mode = policy.ModeOff
	if h := HostFacts(p, SiblingHelper); h.Bwrap != "" || h.BwrapErr != nil || h.Auto != "" || h.LandlockABI != 0 || h.Helper != "" || h.HelperErr != nil {
		t.Errorf("mode off looked at the host: %+v", h)
	}
}

// TestHostFactsHelper: the library's helper is its own binary; cordon's
// is cordon-helper beside it, and a missing one is the error a confined
// plan fails with, naming the path and how to install the binaries
// together, never the running program instead.
func TestHostFactsHelper(t *testing.T) {
	dir := t.TempDir()
	p := &policy.Policy{Mode: policy.ModeStandard, Backend: backend.Landlock, Workspace: dir, Read: []string{dir}, Write: []string{dir}}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if h := HostFacts(p, SelfHelper); h.Helper != exe || h.HelperErr != nil || h.HelperSibling {
		t.Errorf("self: helper %q, %v, sibling %v; want %s", h.Helper, h.HelperErr, h.HelperSibling, exe)
	}
	h := HostFacts(p, SiblingHelper)
	want := "the helper " + filepath.Join(filepath.Dir(exe), "cordon-helper") + " is missing: install all of cordon's binaries together: go install github.com/cordon-sandbox/cordon/cmd/...@"
	if h.Helper != "" || h.HelperErr == nil || !strings.HasPrefix(h.HelperErr.Error(), want) || !h.HelperSibling {
		t.Fatalf("sibling: helper %q, %v; want an error starting %q", h.Helper, h.HelperErr, want)
	}
	if _, err := plan.Build(p, []string{"true"}, plan.Options{Home: dir, Cwd: dir, StateDir: filepath.Join(dir, "state"), Host: h}); err != h.HelperErr {
		t.Errorf("Build without the helper: %v, want %v", err, h.HelperErr)
	}
}
