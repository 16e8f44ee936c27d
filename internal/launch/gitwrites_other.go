//go:build !linux

package launch

// gitWrites: the watch for refused writes of a git directory's config is
// Linux's (inotify); elsewhere nothing is said after the run.
type gitWrites struct{}

func watchGitWrites([]string) (*gitWrites, error) { return nil, nil }

func (*gitWrites) finish() []string { return nil }
