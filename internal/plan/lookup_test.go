package plan

import "testing"

// TestProgramName: the program a command starts by name is command[0]
// when it is a plain name, or a shell's -c script's first word; a path, a
// name with odd characters, or a script starting otherwise gives none.
func TestProgramName(t *testing.T) {
	for _, tc := range []struct {
		command []string
		name    string
		script  bool
	}{
		{[]string{"stringer", "-type=Pill"}, "stringer", false},
		{[]string{"sh", "-c", "stringer -type=Pill"}, "stringer", true},
		{[]string{"/bin/bash", "-c", "  python3 x.py"}, "python3", true},
		{[]string{"bash", "-c", "cd x && make"}, "cd", true},
		{[]string{"bash", "-c", "FOO=1 make"}, "", false},
		{[]string{"bash", "-c", "$(evil)"}, "", false},
		{[]string{"./run.sh"}, "", false},
		{[]string{"/usr/bin/env"}, "", false},
		{[]string{"-x"}, "", false},
		{[]string{"a\x1b[31m"}, "", false},
	} {
		name, script := programName(tc.command)
		if name != tc.name || script != tc.script {
			t.Errorf("programName(%q) = %q, %v; want %q, %v", tc.command, name, script, tc.name, tc.script)
		}
	}
}
