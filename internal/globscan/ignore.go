package globscan

import "github.com/cordon-sandbox/cordon/internal/subpath"

// coveredBy reports whether each path of need is at or below a path of
// ignore (see memo.ignored).
func coveredBy(need, ignore []string) bool {
	if len(need) == 0 {
		return true
	}
	set := subpath.NewSet(ignore)
	for _, p := range need {
		if !set.Holds(p) {
			return false
		}
	}
	return true
}
