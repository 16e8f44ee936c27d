package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/workspace"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReadFileInput is the input of read_file.
type ReadFileInput struct {
	Path      string `json:"path" jsonschema:"the file to read, relative to the workspace or absolute"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to return, 1-based (default 1)"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to return, inclusive (default: the last line)"`
}

// WriteFileInput is the input of write_file.
type WriteFileInput struct {
	Path    string `json:"path" jsonschema:"the file to create or replace"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// EditFileInput is the input of edit_file.
type EditFileInput struct {
	Path      string `json:"path" jsonschema:"the file to edit"`
	OldString string `json:"old_string" jsonschema:"the exact text to replace; it must occur exactly once in the file"`
	NewString string `json:"new_string" jsonschema:"the replacement text (may be empty to delete)"`
}

// ReplaceLinesInput is the input of replace_lines.
type ReplaceLinesInput struct {
	Path        string `json:"path" jsonschema:"the file to edit"`
	StartAnchor string `json:"start_anchor" jsonschema:"anchor N:hash of the first line to replace, exactly as read_file returned it"`
	EndAnchor   string `json:"end_anchor,omitempty" jsonschema:"anchor N:hash of the last line to replace (default: start_anchor)"`
	NewText     string `json:"new_text" jsonschema:"the replacement lines; empty deletes the lines"`
}

// ListDirInput is the input of list_dir.
type ListDirInput struct {
	Path string `json:"path,omitempty" jsonschema:"the directory to list (default: the workspace)"`
}

// FindFilesInput is the input of find_files.
type FindFilesInput struct {
	Pattern        string `json:"pattern" jsonschema:"glob relative to path; ** matches any number of directories, e.g. **/*.go"`
	Path           string `json:"path,omitempty" jsonschema:"the directory to search (default: the workspace)"`
	IncludeIgnored bool   `json:"include_ignored,omitempty" jsonschema:"also find paths that .gitignore files ignore (build output, node_modules, ...); default false"`
}

// GrepInput is the input of grep.
type GrepInput struct {
	Pattern        string `json:"pattern" jsonschema:"RE2 regular expression (or a plain string with literal)"`
	Path           string `json:"path,omitempty" jsonschema:"directory or file to search (default: the workspace)"`
	Literal        bool   `json:"literal,omitempty" jsonschema:"treat pattern as a plain string"`
	IgnoreCase     bool   `json:"ignore_case,omitempty" jsonschema:"match case-insensitively"`
	Include        string `json:"include,omitempty" jsonschema:"only files matching this glob, e.g. *.go or src/**/*.ts"`
	MaxResults     int    `json:"max_results,omitempty" jsonschema:"most matching lines to return"`
	IncludeIgnored bool   `json:"include_ignored,omitempty" jsonschema:"also search files that .gitignore files ignore; default false"`
}

// PathInput is the input of file_info and create_dir.
type PathInput struct {
	Path string `json:"path" jsonschema:"the path"`
}

// RunCommandInput is the input of run_command.
type RunCommandInput struct {
	Argv           []string `json:"argv,omitempty" jsonschema:"the command and its arguments, executed directly without a shell, e.g. [\"go\", \"test\", \"./...\"]"`
	Command        string   `json:"command,omitempty" jsonschema:"a shell command line, run as sh -c COMMAND (on Windows cmd.exe /d /s /c COMMAND); give either argv or command"`
	Dir            string   `json:"dir,omitempty" jsonschema:"working directory inside the workspace (default: the workspace)"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty" jsonschema:"kill the command and everything it started after this many seconds (default: the policy's timeout; never more than the policy's limit)"`
	MaxOutputBytes int      `json:"max_output_bytes,omitempty" jsonschema:"most bytes of combined stdout and stderr to return (default 65536, at most 1048576); longer output keeps its first third and its last two thirds, with a line between saying how many lines and bytes were cut"`
}

// StatusInput is the (empty) input of sandbox_status.
type StatusInput struct{}

func (s *Server) register() {
	add(s, &mcp.Tool{Name: ToolReadFile, Annotations: readOnly("Read file"),
		Description: "Read a UTF-8 text file. Returns up to 2000 lines, each as N:hash|text, where N:hash is the line's anchor for replace_lines. Use start_line and end_line to read part of a large file; call grep or find_files first to locate what you need. A binary file (or a line that is not UTF-8) is an error that says so; look at its bytes with run_command (od, xxd) instead."},
		func(ctx context.Context, in ReadFileInput) (string, error) {
			if err := lineRange(in.StartLine, in.EndLine); err != nil {
				return "", err
			}
			var r *workspace.ReadTextResult
			if err := s.fileCall(ctx, ToolReadFile, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.ReadText(p, in.StartLine, in.EndLine)
				return err
			}); err != nil {
				return "", err
			}
			if r.First == 0 {
				return fmt.Sprintf("[no lines: the file has %d lines]\n", r.TotalLines), nil
			}
			if r.First > 1 || r.Last < r.TotalLines {
				return r.Text + fmt.Sprintf("[lines %d-%d of %d; use start_line to read more]\n", r.First, r.Last, r.TotalLines), nil
			}
			return r.Text, nil
		})
	add(s, &mcp.Tool{Name: ToolWriteFile, Annotations: writes("Write file", true, true),
		Description: "Create a file or replace its whole content, atomically (missing parent directories are created). Prefer edit_file or replace_lines for changes to an existing file."},
		func(ctx context.Context, in WriteFileInput) (string, error) {
			var r *workspace.WriteResult
			if err := s.fileCall(ctx, ToolWriteFile, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.WriteFile(p, in.Content)
				return err
			}); err != nil {
				return "", err
			}
			return writeText("wrote", r), nil
		})
	add(s, &mcp.Tool{Name: ToolEditFile, Annotations: writes("Edit file", true, false),
		Description: "Replace one exact occurrence of old_string with new_string in a file. Fails, changing nothing, when old_string is not found or occurs more than once (include more surrounding text to make it unique)."},
		func(ctx context.Context, in EditFileInput) (string, error) {
			var r *workspace.WriteResult
			if err := s.fileCall(ctx, ToolEditFile, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.EditFile(p, in.OldString, in.NewString)
				return err
			}); err != nil {
				return "", err
			}
			return writeText("edited", r), nil
		})
	add(s, &mcp.Tool{Name: ToolReplaceLines, Annotations: writes("Replace lines", true, false),
		Description: "Replace the lines from start_anchor to end_anchor (inclusive) with new_text. Anchors are the N:hash prefixes read_file returns; if the file changed since it was read (a stale anchor), nothing is written and you must read it again."},
		func(ctx context.Context, in ReplaceLinesInput) (string, error) {
			var r *workspace.WriteResult
			if err := s.fileCall(ctx, ToolReplaceLines, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.ReplaceLines(p, in.StartAnchor, in.EndAnchor, in.NewText)
				return err
			}); err != nil {
				return "", err
			}
			return writeText("edited", r), nil
		})
	add(s, &mcp.Tool{Name: ToolListDir, Annotations: readOnly("List directory"),
		Description: "List a directory: one entry per line as type, size, mode, modification time and name (directories end with /). Symbolic links are shown, not followed."},
		func(ctx context.Context, in ListDirInput) (string, error) {
			var r *workspace.ListResult
			if err := s.fileCall(ctx, ToolListDir, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.List(p)
				return err
			}); err != nil {
				return "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s\n", r.Path)
			for _, e := range r.Entries {
				name := e.Name
				if e.Type == "dir" {
					name += "/"
				}
				fmt.Fprintf(&b, "%-7s %10d %s %s %s\n", e.Type, e.Size, e.Mode, e.ModTime.UTC().Format(time.RFC3339), name)
			}
			if r.Truncated {
				b.WriteString("[... truncated by cordon: entry limit reached]\n")
			}
			return b.String(), nil
		})
	add(s, &mcp.Tool{Name: ToolFindFiles, Annotations: readOnly("Find files"),
		Description: "Find files and directories whose path relative to path matches a glob: ** matches any number of directories (**/*.go finds Go files at any depth, *.go only at the top). .git, denied paths and, unless include_ignored is set, paths ignored by .gitignore files (at any depth, as git does) are skipped. One path per line."},
		func(ctx context.Context, in FindFilesInput) (string, error) {
			var r *workspace.FindResult
			if err := s.fileCall(ctx, ToolFindFiles, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.Find(p, in.Pattern, workspace.FindOptions{IncludeIgnored: in.IncludeIgnored})
				return err
			}); err != nil {
				return "", err
			}
			var b strings.Builder
			for _, p := range r.Paths {
				b.WriteString(p)
				b.WriteByte('\n')
			}
			if r.Truncated {
				b.WriteString("[... truncated by cordon: result limit reached]\n")
			}
			switch {
			case len(r.Paths) == 0 && r.Ignored > 0:
				fmt.Fprintf(&b, "[no matches; %s ignored by .gitignore skipped: set include_ignored to find them too]\n", plural(int64(r.Ignored), "path", "paths"))
			case len(r.Paths) == 0:
				b.WriteString("[no matches]\n")
			case r.Ignored > 0:
				fmt.Fprintf(&b, "[%s found; %s ignored by .gitignore skipped (include_ignored lists them)]\n", plural(int64(len(r.Paths)), "path", "paths"), plural(int64(r.Ignored), "path", "paths"))
			}
			return b.String(), nil
		})
	add(s, &mcp.Tool{Name: ToolGrep, Annotations: readOnly("Search file contents"),
		Description: "Search file contents for an RE2 regular expression (or a plain string with literal). Skips binary files, .git, denied paths and, unless include_ignored is set, files ignored by .gitignore files (at any depth, as git does). One match per line as path:line:text, then a count."},
		func(ctx context.Context, in GrepInput) (string, error) {
			if in.MaxResults < 0 {
				return "", fmt.Errorf("grep: max_results %d is out of range: give a positive number (at most %d are returned), or leave it out", in.MaxResults, s.fs.Limits.MaxResults)
			}
			var r *workspace.GrepResult
			if err := s.fileCall(ctx, ToolGrep, in.Path, func(fsys *workspace.FS, p string) (err error) {
				r, err = fsys.Grep(in.Pattern, p, workspace.GrepOptions{IgnoreCase: in.IgnoreCase, Literal: in.Literal, Include: in.Include,
					MaxResults: in.MaxResults, IncludeIgnored: in.IncludeIgnored})
				return err
			}); err != nil {
				return "", err
			}
			var b strings.Builder
			files := 0
			for i, m := range r.Matches {
				if i == 0 || m.Path != r.Matches[i-1].Path {
					files++ // the matches of a file are together, in walk order
				}
				fmt.Fprintf(&b, "%s:%d:%s\n", m.Path, m.Line, m.Text)
			}
			if r.Truncated {
				b.WriteString("[... truncated by cordon: result limit reached]\n")
			}
			b.WriteString(grepSummary(len(r.Matches), files, r.FilesSearched, r.Ignored))
			return b.String(), nil
		})
	add(s, &mcp.Tool{Name: ToolFileInfo, Annotations: readOnly("File info"),
		Description: "Describe a file or directory as JSON: resolved path (symbolic links followed inside the workspace), type, size, mode and modification time."},
		func(ctx context.Context, in PathInput) (string, error) {
			var e *workspace.Entry
			if err := s.fileCall(ctx, ToolFileInfo, in.Path, func(fsys *workspace.FS, p string) (err error) {
				e, err = fsys.Info(p)
				return err
			}); err != nil {
				return "", err
			}
			b, err := json.Marshal(e)
			return string(b), err
		})
	add(s, &mcp.Tool{Name: ToolCreateDir, Annotations: writes("Create directory", false, true),
		Description: "Create a directory, and its missing parents. Succeeds if it already exists."},
		func(ctx context.Context, in PathInput) (string, error) {
			var e *workspace.Entry
			if err := s.fileCall(ctx, ToolCreateDir, in.Path, func(fsys *workspace.FS, p string) (err error) {
				e, err = fsys.Mkdir(p)
				return err
			}); err != nil {
				return "", err
			}
			return "created directory " + e.Name, nil
		})
	addResult(s, &mcp.Tool{Name: ToolRunCommand, Annotations: &mcp.ToolAnnotations{Title: "Run command", DestructiveHint: ptr(true)},
		Description: "Run a command in cordon's OS sandbox with the same policy as the file tools (files outside the allowed paths invisible or read-only, secrets masked, network as the policy says, resource limits). Give argv (run directly) or command (run as sh -c COMMAND). Returns the exit code, then the combined stdout and stderr; output longer than max_output_bytes keeps its beginning and its end (where a failing build or test says why), with a line between saying how many lines were cut. The command is killed, with everything it started, when the timeout fires (exit code 124)."},
		s.runCommand)
	add(s, &mcp.Tool{Name: ToolSandboxStatus, Annotations: readOnly("Sandbox status"),
		Description: "Report cordon's sandbox as JSON: mode, profile, workspace, the backend run_command uses, and what is enforced for file tools and commands."},
		func(context.Context, StatusInput) (string, error) {
			b, err := json.MarshalIndent(s.status(), "", "  ")
			return string(b), err
		})
}

// lineRange checks read_file's start_line and end_line: 0 means the
// default, a line past the end reads nothing (or up to the end), and
// anything negative or a range that ends before it starts is refused.
func lineRange(start, end int) error {
	switch {
	case start < 0:
		return fmt.Errorf("read_file: start_line %d is out of range: lines are numbered from 1", start)
	case end < 0:
		return fmt.Errorf("read_file: end_line %d is out of range: lines are numbered from 1", end)
	case end > 0 && end < max(start, 1):
		return fmt.Errorf("read_file: start_line %d is after end_line %d: give start_line <= end_line, or leave end_line out to read to the end", max(start, 1), end)
	}
	return nil
}

// grepSummary is grep's last line: "[3 matches in 2 files; 7 files
// searched]", with the paths .gitignore kept out of the search.
func grepSummary(matches, files, searched, ignored int) string {
	var b strings.Builder
	if matches == 0 {
		b.WriteString("[no matches")
	} else {
		fmt.Fprintf(&b, "[%s in %s", plural(int64(matches), "match", "matches"), plural(int64(files), "file", "files"))
	}
	fmt.Fprintf(&b, "; %s searched", plural(int64(searched), "file", "files"))
	if ignored > 0 {
		fmt.Fprintf(&b, ", %s ignored by .gitignore skipped", plural(int64(ignored), "path", "paths"))
		if matches == 0 {
			b.WriteString(": set include_ignored to search them too")
		}
	}
	b.WriteString("]\n")
	return b.String()
}

func writeText(verb string, r *workspace.WriteResult) string {
	s := fmt.Sprintf("%s %s (%d bytes", verb, r.Path, r.Bytes)
	if r.Created {
		s += ", created"
	}
	return s + ")"
}
