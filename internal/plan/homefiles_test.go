package plan

import (
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
)

// homeDirs are the entries of policy.HomeProtected that are directories:
// a placeholder for a missing one is an empty directory.
var homeDirs = map[string]bool{
	".local/bin": true, "bin": true, ".cargo/bin": true, ".config/systemd": true, ".config/autostart": true,
	".config/environment.d": true, ".local/share/applications": true, "go/bin": true, ".bun/bin": true,
	".deno/bin": true, ".yarn/bin": true, ".volta/bin": true, ".local/share/pnpm": true, ".pyenv/shims": true,
	".asdf/shims": true, ".asdf/plugins": true, ".local/share/mise": true, ".sdkman/bin": true, ".rustup": true,
	".config/git": true, ".config/direnv": true, ".vim": true, ".config/vim": true, ".config/nvim": true,
	".local/share/nvim": true, ".config/zed": true, ".config/helix": true, ".emacs.d": true, ".config/tmux": true,
	".config/Code/User": true, ".gradle/init.d": true, ".sbt": true, ".config/mise": true, ".pre-commit": true,
	".docker/cli-plugins": true, ".local/share/gh/extensions": true, ".config/pip": true, ".pip": true,
	".local/lib": true, ".ipython": true,
}

// TestHomeProtectedKinds: every entry of policy.HomeProtected is known to
// be a file (its name is in homeFiles: a missing one's placeholder is an
// empty file, which the tool reads as no setting) or a directory, so that
// a new entry is given the right placeholder.
func TestHomeProtectedKinds(t *testing.T) {
	for _, h := range policy.HomeProtected {
		rel, err := filepath.Rel("${HOME}", h)
		if err != nil {
			t.Fatal(err)
		}
		file, dir := homeFiles[filepath.Base(rel)], homeDirs[rel]
		if file == dir {
			t.Errorf("%s: is it a file (homeFiles: %v) or a directory (homeDirs: %v)? Say which, once", h, file, dir)
		}
	}
}
