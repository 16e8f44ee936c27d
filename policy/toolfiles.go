package policy

import (
	"fmt"
	"strings"
)

// Answers of a ToolFile: what cordon does about a project file that makes
// a routine command run a program.
const (
	// AnswerReadOnly: an existing one stays read-only during the run, a new
	// one is renamed aside after it (no legitimate build writes the file).
	AnswerReadOnly = "read-only"
	// AnswerDisarm: checked after the run; a change no legitimate tool run
	// makes is reported and disarmed (renamed aside, or restored).
	AnswerDisarm = "disarm"
	// AnswerReport: checked after the run; a change is reported, not
	// undone (legitimate tool runs make it too).
	AnswerReport = "report"
)

// ToolFile is one file that a common tool reads when it starts, and that
// makes it run a program.
type ToolFile struct {
	// Path is the file relative to a writable root: "**/" in front
	// matches it at any depth (the tool looks for it in every directory
	// of a project, or its parents); a trailing "/" is a directory.
	Path string
	// Tool is the tool that reads it.
	Tool string
	// Runs says what runs, and when.
	Runs string
	// Answer is AnswerReadOnly, AnswerDisarm or AnswerReport.
	Answer string
	// Why says why that answer.
	Why string
}

// ToolFiles are the project files through which a routine command (an
// install, a build, a test, an editor opening the project) runs a program
// named in the file. It is the one list: the read-only rows are added to
// Protected and ProtectedNames (so the bubblewrap plan keeps them
// read-only, the check after the run renames a new one aside, and the MCP
// file tools refuse to write them), and the check after the run (package
// planted) reports the others. The MCP file tools refuse to write every
// row (see FileToolRefused). docs/tool-files.md is generated from it
// (TestToolFilesDoc).
//
// Not listed, on purpose: a project's own build code (Makefile,
// package.json scripts, build.gradle, pom.xml, setup.py, mvnw, gradlew):
// the user runs it knowingly and reviews it as code; and the files the
// rest of Protected already covers (.envrc, .vscode/, .idea/, git's).
var ToolFiles = []ToolFile{
	{"**/.npmrc", "npm, pnpm, yarn 1", "script-shell, shell, node-options (--require), git, onload-script: a program or module runs on `npm run`, `npm install`, `npm exec`", AnswerReadOnly,
		"npm never writes a project's .npmrc while it installs or builds; `npm config set --location=project` is a deliberate setup step, done outside cordon"},
	{"**/.yarnrc", "yarn 1 (classic)", "yarn-path: the JavaScript file it names runs instead of yarn on every `yarn` command", AnswerReadOnly,
		"written only by `yarn policies set-version`, a setup step, not by an install or a build"},
	{"**/.yarnrc.yml", "yarn 2+ (berry)", "yarnPath (the release that runs as yarn) and plugins (loaded into every `yarn` command)", AnswerReadOnly,
		"written by `yarn set version` and `yarn plugin import`, setup steps; `yarn install` only reads it"},
	{"**/.yarn/releases/", "yarn 2+ (berry)", "the release yarnPath names runs on every `yarn` command", AnswerReadOnly,
		"written only by `yarn set version`"},
	{"**/.yarn/plugins/", "yarn 2+ (berry)", "the plugins .yarnrc.yml lists load into every `yarn` command", AnswerReadOnly,
		"written only by `yarn plugin import`"},
	{"**/.pnpmfile.cjs", "pnpm", "its hooks (readPackage, afterAllResolved) run on `pnpm install`", AnswerReadOnly,
		"pnpm never writes it; it is the project's configuration"},
	{"**/bunfig.toml", "bun", "preload: scripts that run before `bun run` and `bun test`", AnswerReadOnly,
		"bun never writes it"},
	{"**/.cargo/config.toml", "cargo", "build.rustc-wrapper, build.rustc, target.*.linker, target.*.runner, [alias]: run on `cargo build`, `cargo test`, and `cargo metadata`, which editors run when a project opens; cargo reads it in every parent directory", AnswerReadOnly,
		"a build never writes it (`cargo vendor` prints what to add, it does not write it)"},
	{"**/.cargo/config", "cargo", "the same keys as .cargo/config.toml (the older name)", AnswerReadOnly,
		"a build never writes it"},
	{"**/rust-toolchain.toml", "rustup", "[toolchain] path: cargo and rustc run from the directory it names", AnswerReadOnly,
		"rustup never writes it"},
	{"**/rust-toolchain", "rustup", "the same as rust-toolchain.toml (the older name)", AnswerReadOnly,
		"rustup never writes it"},
	{"**/.mvn/jvm.config", "maven", "JVM options such as -javaagent: a Java agent runs on every `mvn` command, `mvn -v` included", AnswerReadOnly,
		"maven never writes it"},
	{"**/.mvn/maven.config", "maven", "command-line options added to every `mvn` command (-D properties that name programs, extensions)", AnswerReadOnly,
		"maven never writes it"},
	{"**/.mvn/extensions.xml", "maven", "core extensions: their code loads into every `mvn` command", AnswerReadOnly,
		"maven never writes it"},
	{"**/.mvn/wrapper/maven-wrapper.properties", "maven wrapper", "distributionUrl and wrapperUrl: `./mvnw` downloads and runs what they name", AnswerReadOnly,
		"written by `mvn wrapper:wrapper`, a setup step, not by a build"},
	{"**/gradle/wrapper/gradle-wrapper.properties", "gradle wrapper", "distributionUrl: `./gradlew` downloads and runs the distribution it names", AnswerReadOnly,
		"written by `gradle wrapper`, a setup step, not by a build"},
	{"**/gradle.properties", "gradle", "org.gradle.jvmargs (-javaagent) and org.gradle.java.home: a program runs on every `gradle` command", AnswerReadOnly,
		"a build does not write it; a release plugin that bumps a version there is run by the user, outside cordon"},
	{"**/.jvmopts", "sbt", "JVM options (-javaagent) of every `sbt` command", AnswerReadOnly,
		"sbt never writes it"},
	{"**/.sbtopts", "sbt", "options (-J-javaagent) of every `sbt` command", AnswerReadOnly,
		"sbt never writes it"},
	{"**/.bazelrc", "bazel", "--workspace_status_command, --run_under, --action_env: programs run on `bazel build` and `bazel test`", AnswerReadOnly,
		"bazel never writes it"},
	{"**/.tool-versions", "asdf, mise", "a version \"path:DIR\" runs the tool from DIR on every shimmed command (node, python, ...)", AnswerReadOnly,
		"written by `asdf set` and `mise use`, setup steps"},
	{"**/mise.toml", "mise", "[env] _.source, [hooks] and tasks: shell code runs when the shell enters the directory", AnswerReadOnly,
		"written by `mise use`, a setup step"},
	{"**/.mise.toml", "mise", "the same as mise.toml", AnswerReadOnly, "written by `mise use`, a setup step"},
	{"**/mise.local.toml", "mise", "the same as mise.toml", AnswerReadOnly, "written by `mise use`, a setup step"},
	{"**/.mise.local.toml", "mise", "the same as mise.toml", AnswerReadOnly, "written by `mise use`, a setup step"},
	{"**/.config/mise/config.toml", "mise", "the same as mise.toml", AnswerReadOnly, "written by `mise use`, a setup step"},
	{"**/.config/mise.toml", "mise", "the same as mise.toml", AnswerReadOnly, "written by `mise use`, a setup step"},
	{"**/.pre-commit-config.yaml", "pre-commit", "a local hook's entry runs on the next `git commit` once the user ran `pre-commit install`", AnswerReadOnly,
		"written by `pre-commit autoupdate`, run by the user"},
	{"**/lefthook.yml", "lefthook", "its commands run from git's hooks on the next `git commit` or `git push`", AnswerReadOnly,
		"lefthook never writes it"},
	{"**/.lefthook.yml", "lefthook", "the same as lefthook.yml", AnswerReadOnly, "lefthook never writes it"},
	{"**/lefthook.yaml", "lefthook", "the same as lefthook.yml", AnswerReadOnly, "lefthook never writes it"},
	{"**/.lefthook.yaml", "lefthook", "the same as lefthook.yml", AnswerReadOnly, "lefthook never writes it"},
	{"**/lefthook-local.yml", "lefthook", "the same as lefthook.yml, merged over it", AnswerReadOnly, "lefthook never writes it"},
	{"**/.lefthook-local.yml", "lefthook", "the same as lefthook.yml, merged over it", AnswerReadOnly, "lefthook never writes it"},
	{"**/.exrc", "vim, neovim", "ex commands (including `!cmd`) run when the editor starts in the directory with 'exrc' set", AnswerReadOnly,
		"an editor never writes it"},
	{"**/.nvimrc", "neovim", "the same as .exrc", AnswerReadOnly, "an editor never writes it"},
	{"**/.nvim.lua", "neovim", "Lua code runs when neovim starts in the directory with 'exrc' set", AnswerReadOnly, "an editor never writes it"},
	{"**/.lvimrc", "vim (localvimrc)", "vim script runs when a file below the directory is opened", AnswerReadOnly, "an editor never writes it"},
	{"**/.devcontainer/", "VS Code Dev Containers", "initializeCommand runs on the host when the project is opened in a container", AnswerReadOnly,
		"a build never writes it"},
	{"**/.devcontainer.json", "VS Code Dev Containers", "the same as .devcontainer/", AnswerReadOnly, "a build never writes it"},
	{"**/.zed/", "Zed", "tasks and language-server binaries it names run when the project opens", AnswerReadOnly, "a build never writes it"},
	{"**/.helix/", "Helix", "language-server commands it names run when a file opens", AnswerReadOnly, "a build never writes it"},
	{"**/.pylintrc", "pylint", "init-hook: Python code runs whenever pylint runs (editors run it on open)", AnswerReadOnly, "pylint never writes it"},
	{"**/pylintrc", "pylint", "the same as .pylintrc", AnswerReadOnly, "pylint never writes it"},
	{"**/.pdbrc", "pdb", "its commands (Python statements) run when pdb starts in the directory", AnswerReadOnly, "pdb never writes it"},
	{"**/.irbrc", "irb", "Ruby code runs when irb starts in the directory", AnswerReadOnly, "irb never writes it"},

	// Other coding agents' project files: the MCP servers, hooks and
	// commands they name start when the agent or its editor extension
	// opens the project (Claude Code's, Cursor's, Codex's and Gemini CLI's
	// are in Protected with placeholders).
	{"**/.roo/", "Roo Code", "the MCP servers .roo/mcp.json names start when the project opens in the editor", AnswerReadOnly, "a build never writes it"},
	{"**/.kiro/", "Kiro", "the MCP servers .kiro/settings/mcp.json names start when the project opens; its agent hooks run on file events", AnswerReadOnly, "a build never writes it"},
	{"**/.amazonq/", "Amazon Q Developer", "the MCP servers .amazonq/mcp.json names start with `q chat` or the editor extension in the project", AnswerReadOnly, "a build never writes it"},
	{"**/.continue/", "Continue", "the MCP servers of .continue/mcpServers/ start when the project opens in the editor", AnswerReadOnly, "a build never writes it"},
	{"**/.qwen/", "Qwen Code", "the MCP servers .qwen/settings.json names start with `qwen` in the project", AnswerReadOnly, "a build never writes it"},
	{"**/opencode.json", "opencode", "its MCP servers, formatters and language servers (each a command) run when `opencode` starts in the project", AnswerReadOnly, "a build never writes it"},
	{"**/opencode.jsonc", "opencode", "the same as opencode.json", AnswerReadOnly, "a build never writes it"},
	{"**/.opencode/", "opencode", "its plugins (JavaScript loaded into opencode) and commands", AnswerReadOnly, "a build never writes it"},
	{"**/crush.json", "Crush", "its MCP servers and language servers (each a command) run when `crush` starts in the project", AnswerReadOnly, "a build never writes it"},
	{"**/.crush.json", "Crush", "the same as crush.json", AnswerReadOnly, "a build never writes it"},
	{"**/.aider.conf.yml", "aider", "lint-cmd and test-cmd run after each edit aider makes (auto-lint is on by default)", AnswerReadOnly, "aider never writes it"},

	// Python virtual environments: pip writes these, so they stay
	// writable and the check after the run looks at them (see package
	// planted), in every virtual environment (a directory holding
	// pyvenv.cfg) near the top of a writable root.
	{"**/site-packages/*.pth", "python (virtualenv)", "a line starting with `import` runs at every start of the environment's python (pytest, pip, the editor)", AnswerDisarm,
		"pip installs .pth files and lists each in its distribution's RECORD with its hash: one that RECORD lists as it is now is allowed; another with an import line is renamed aside"},
	{"**/site-packages/sitecustomize.py", "python (virtualenv)", "imported at every start of the environment's python", AnswerDisarm,
		"a new or changed one that no installed distribution's RECORD lists as it is now is renamed aside"},
	{"**/site-packages/usercustomize.py", "python (virtualenv)", "imported at every start of python when user site-packages are enabled", AnswerDisarm,
		"a new or changed one that no installed distribution's RECORD lists as it is now is renamed aside"},
	{"**/bin/activate", "python (virtualenv)", "shell code runs when the user sources it", AnswerDisarm,
		"nothing edits the activate script of an existing environment in place (pip does not touch it); a change is undone: the run's version is renamed aside and the one from before the run restored"},
	{"**/bin/activate.csh", "python (virtualenv)", "the same as bin/activate, for csh", AnswerDisarm, "the same as bin/activate"},
	{"**/bin/activate.fish", "python (virtualenv)", "the same as bin/activate, for fish", AnswerDisarm, "the same as bin/activate"},
	{"**/bin/activate.nu", "python (virtualenv)", "the same as bin/activate, for nushell", AnswerDisarm, "the same as bin/activate"},
	{"**/bin/Activate.ps1", "python (virtualenv)", "the same as bin/activate, for PowerShell", AnswerDisarm, "the same as bin/activate"},
	{"**/bin/activate_this.py", "python (virtualenv)", "runs when a program execs it to enter the environment", AnswerDisarm, "the same as bin/activate"},
	{"**/pyvenv.cfg", "python (virtualenv)", "home and executable decide which interpreter and standard library the environment's python runs", AnswerReport,
		"`python -m venv --upgrade` rewrites it legitimately: a change is reported, not undone"},
}

// ToolFilesByAnswer returns the rows of ToolFiles with the given answer.
func ToolFilesByAnswer(answer string) []ToolFile {
	var out []ToolFile
	for _, t := range ToolFiles {
		if t.Answer == answer {
			out = append(out, t)
		}
	}
	return out
}

// ToolFileName reports whether the protected name n (as in ProtectedNames,
// without "**/") is a read-only row of ToolFiles. Such a name gets no
// placeholder where it is missing (an empty file there would show in git
// status and change what the tool does: an empty extensions.xml does not
// parse); a new one is renamed aside after the run.
func ToolFileName(n string) bool {
	return toolFileNames[strings.TrimSuffix(n, "/")]
}

// toolFileNames are the read-only rows' names, without "**/" and "/".
var toolFileNames = map[string]bool{}

// ToolFileSkipDirs are the directories below which the read-only rows of
// ToolFiles are not protected: installed packages (a React Native
// library's android/gradle.properties, a package's stray .pylintrc). No
// tool reads its settings from a dependency's directory on a routine
// command, and keeping them read-only would make npm and pip fail to
// replace or remove those packages.
var ToolFileSkipDirs = []string{"node_modules", "site-packages"}

// ToolFileSkipped reports whether the slash-separated rel (relative to a
// writable root) lies below one of ToolFileSkipDirs.
func ToolFileSkipped(rel string) bool {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, c := range parts[:len(parts)-1] {
		for _, d := range ToolFileSkipDirs {
			if c == d {
				return true
			}
		}
	}
	return false
}

// FileToolRefused are the rules (as in Protected) of the rows of ToolFiles
// that are not read-only: the MCP file tools refuse to write them too (an
// agent's file tool has no reason to write a virtual environment's .pth or
// activate script; pip, run as a command, is checked after the run).
func FileToolRefused() []string {
	var out []string
	for _, t := range ToolFiles {
		if t.Answer != AnswerReadOnly {
			out = append(out, t.Path)
		}
	}
	return out
}

// ToolFilesMarkdown renders ToolFiles as the Markdown table of
// docs/tool-files.md.
func ToolFilesMarkdown() string {
	var b strings.Builder
	b.WriteString("| File | Tool | What runs, and when | cordon | Why |\n")
	b.WriteString("|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, t := range ToolFiles {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", t.Path, cell(t.Tool), cell(t.Runs), t.Answer, cell(t.Why))
	}
	return b.String()
}

// The read-only rows join the protected rules (see Protected and
// ProtectedNames): one list, not two.
func init() {
	for _, t := range ToolFilesByAnswer(AnswerReadOnly) {
		Protected = append(Protected, t.Path)
		ProtectedNames = append(ProtectedNames, strings.TrimPrefix(t.Path, "**/"))
		toolFileNames[strings.TrimSuffix(strings.TrimPrefix(t.Path, "**/"), "/")] = true
	}
}
