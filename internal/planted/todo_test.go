package planted

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testenv"
)

// TestRebaseTodo: an interactive rebase the run leaves stopped carries
// exec lines that the host's `git rebase --continue` would run. Check
// comments out the lines the run added, keeps the user's own (a rebase
// with --exec already stopped before the run), and git then continues
// without running the run's.
func TestRebaseTodo(t *testing.T) {
	testenv.Tool(t, "git", "apt-get install git")
	cases := []struct {
		name string
		// before runs before the snapshot; during is the run.
		before, during func(t *testing.T, git func(...string) string, todo, marks string)
		want           []string // findings (summary)
		ran            []string // markers the host's continue creates
	}{
		{
			name: "the run stops a rebase with --exec",
			during: func(t *testing.T, git func(...string) string, _, marks string) {
				git("-c", "sequence.editor=sed -i 1ibreak", "rebase", "-q", "-i", "--exec", "touch "+filepath.Join(marks, "run"), "HEAD~2")
			},
			want: []string{"todo .git/rebase-merge/git-rebase-todo exec true", "todo .git/rebase-merge/git-rebase-todo exec true"},
		},
		{
			name: "the run adds to the user's stopped rebase",
			before: func(t *testing.T, git func(...string) string, _, marks string) {
				git("-c", "sequence.editor=sed -i 1ibreak", "rebase", "-q", "-i", "--exec", "touch "+filepath.Join(marks, "user"), "HEAD~2")
			},
			during: func(t *testing.T, _ func(...string) string, todo, marks string) {
				f, err := os.OpenFile(todo, os.O_APPEND|os.O_WRONLY, 0)
				must(t, err)
				_, err = fmt.Fprintf(f, "  x touch %s\n", filepath.Join(marks, "run"))
				must(t, err)
				must(t, f.Close())
			},
			want: []string{"todo .git/rebase-merge/git-rebase-todo exec true"},
			ran:  []string{"user"},
		},
		{
			name: "the user's stopped rebase, untouched",
			before: func(t *testing.T, git func(...string) string, _, marks string) {
				git("-c", "sequence.editor=sed -i 1ibreak", "rebase", "-q", "-i", "--exec", "touch "+filepath.Join(marks, "user"), "HEAD~2")
			},
			during: func(*testing.T, func(...string) string, string, string) {},
			ran:    []string{"user"},
		},
		{
			name: "a to-do list that is a link",
			during: func(t *testing.T, git func(...string) string, todo, marks string) {
				git("-c", "sequence.editor=sed -i 1ibreak", "rebase", "-q", "-i", "HEAD~2")
				elsewhere := filepath.Join(filepath.Dir(marks), "todo")
				write(t, elsewhere, "exec touch "+filepath.Join(marks, "run")+"\n", 0o644)
				must(t, os.Remove(todo))
				must(t, os.Symlink(elsewhere, todo))
			},
			want: []string{"todo .git/rebase-merge/git-rebase-todo (to-do list) true"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := newWorkspace(t)
			home, ws, marks := filepath.Join(base, "home"), filepath.Join(base, "ws"), filepath.Join(base, "marks")
			for _, d := range []string{home, ws, marks} {
				must(t, os.MkdirAll(d, 0o755))
			}
			git := func(args ...string) string {
				t.Helper()
				out, err := gitCmd(t, home, ws, args...)
				if err != nil {
					t.Fatalf("git %q: %v\n%s", args, err, out)
				}
				return out
			}
			git("init", "-q")
			for i := range 3 {
				write(t, filepath.Join(ws, fmt.Sprint(i)), "x\n", 0o644)
				git("add", ".")
				git("commit", "-q", "-m", fmt.Sprint(i))
			}
			todo := filepath.Join(ws, ".git", "rebase-merge", "git-rebase-todo")
			if tc.before != nil {
				tc.before(t, git, todo, marks)
			}
			b := snapshotOf(t, ws)
			tc.during(t, git, todo, marks)
			rep, err := b.Check([]string{ws}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(rep); !slices.Equal(got, tc.want) {
				t.Fatalf("findings %q, want %q", got, tc.want)
			}
			for _, f := range rep.Findings {
				if w := f.Warning(); !strings.Contains(w, "git rebase --continue") || !strings.Contains(w, "disarmed") {
					t.Errorf("warning %q", w)
				}
			}
			// The host's routine next step.
			for range 4 {
				_, _ = gitCmd(t, home, ws, "rebase", "--continue")
				if _, err := os.Stat(filepath.Join(ws, ".git", "rebase-merge")); err != nil {
					break
				}
			}
			ents, _ := os.ReadDir(marks)
			var ran []string
			for _, e := range ents {
				ran = append(ran, e.Name())
			}
			if !slices.Equal(ran, tc.ran) {
				t.Errorf("the host's git rebase --continue ran %q, want %q", ran, tc.ran)
			}
		})
	}
}
