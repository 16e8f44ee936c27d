package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// TestToolFilesRefused: the file tools refuse to write every file of
// policy.ToolFiles, at any depth and whether it exists or not: the
// read-only rows (a project's .npmrc, .cargo/config.toml, .mvn/jvm.config)
// and the virtual environments' files that pip writes (a .pth,
// sitecustomize.py, bin/activate), and the home's start-up files of the
// same tools when the home is a writable root; ordinary files beside them
// stay writable.
func TestToolFilesRefused(t *testing.T) {
	base, err := filepath.EvalSymlinks(tempDir(t))
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "home", "proj")
	home := filepath.Join(base, "home")
	sp := filepath.Join(".venv", "lib", "python3.12", "site-packages")
	mustMkdir(t, filepath.Join(ws, sp))
	mustWrite(t, filepath.Join(ws, ".npmrc"), "fund=false\n")
	mustMkdir(t, filepath.Join(ws, ".venv", "bin"))
	mustWrite(t, filepath.Join(ws, ".venv", "bin", "activate"), "# activate\n")
	var deny []string
	for _, h := range policy.HomeProtected {
		deny = append(deny, strings.ReplaceAll(h, "${HOME}", home))
	}
	p := &policy.Policy{Mode: policy.ModeStandard, Workspace: ws, Write: []string{ws, home}, DenyWrite: deny, Protected: policy.Protected}
	fsys, err := New(p, Root{Path: home, Writable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })

	refused := []struct{ path, rule string }{
		{".npmrc", "**/.npmrc"},
		{"pkg/a/.npmrc", "**/.npmrc"},
		{".cargo/config.toml", "**/.cargo/config.toml"},
		{"crates/x/.cargo/config", "**/.cargo/config"},
		{".mvn/jvm.config", "**/.mvn/jvm.config"},
		{"gradle/wrapper/gradle-wrapper.properties", "**/gradle/wrapper/gradle-wrapper.properties"},
		{".yarn/releases/yarn-4.0.0.cjs", "**/.yarn/releases/"},
		{".pre-commit-config.yaml", "**/.pre-commit-config.yaml"},
		{"lefthook.yml", "**/lefthook.yml"},
		{".exrc", "**/.exrc"},
		{".nvim.lua", "**/.nvim.lua"},
		{"bunfig.toml", "**/bunfig.toml"},
		{filepath.Join(sp, "x.pth"), "**/site-packages/*.pth"},
		{filepath.Join(sp, "sitecustomize.py"), "**/site-packages/sitecustomize.py"},
		{".venv/bin/activate", "**/bin/activate"},
		{".venv/pyvenv.cfg", "**/pyvenv.cfg"},
		{filepath.Join(home, ".mavenrc"), filepath.Join(home, ".mavenrc")},
		{filepath.Join(home, ".exrc"), filepath.Join(home, ".exrc")},
		{filepath.Join(home, ".gradle/init.d/x.gradle"), filepath.Join(home, ".gradle/init.d")},
		{filepath.Join(home, ".config/nvim/init.lua"), filepath.Join(home, ".config/nvim")},
		{filepath.Join(home, ".ssh/config"), filepath.Join(home, ".ssh/config")},
	}
	for _, tc := range refused {
		t.Run(tc.path, func(t *testing.T) {
			abs := tc.path
			if !filepath.IsAbs(abs) {
				abs = filepath.Join(ws, abs)
			}
			before, beforeErr := os.ReadFile(abs)
			_, err := fsys.WriteFile(tc.path, "import os\n")
			v := violation(t, err, KindProtected)
			if v.Rule != filepath.ToSlash(tc.rule) {
				t.Errorf("rule %q, want %q: %v", v.Rule, tc.rule, v)
			}
			after, afterErr := os.ReadFile(abs)
			if string(after) != string(before) || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("%s changed", tc.path)
			}
		})
	}
	for _, p := range []string{filepath.Join(sp, "pkg", "mod.py"), "src/config.toml", "config/gradle.yml", ".yarn/cache/x.zip", "bin/run", "Plugins/x.txt"} {
		if _, err := fsys.WriteFile(p, "ok\n"); err != nil {
			t.Errorf("writing %s: %v", p, err)
		}
	}
}
