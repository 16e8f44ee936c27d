//go:build !linux

package launch

import "github.com/cordon-sandbox/cordon/internal/monitor"

// gitCopies: private copies of a repository's config are served by the
// Landlock-only backend's supervisor, on Linux only.
type gitCopies struct{}

func copyGitConfigs(string, []string, bool, func(string) bool) (*gitCopies, error) { return nil, nil }

func (*gitCopies) redirects(bool) []monitor.Redirect { return nil }

func (*gitCopies) served(string) bool { return false }

func (*gitCopies) merge(string, []string, bool) (notes, warnings []string, refused int) {
	return nil, nil, 0
}

func (*gitCopies) close() {}
