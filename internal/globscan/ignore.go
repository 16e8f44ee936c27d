package globscan

import "path/filepath"

// ignoredBy returns whether a path is at or below one of the paths of
// ignore (absolute, cleaned here), or nil when ignore is empty.
func ignoredBy(ignore []string) func(string) bool {
	if len(ignore) == 0 {
		return nil
	}
	set := make(map[string]bool, len(ignore))
	for _, p := range ignore {
		if filepath.IsAbs(p) {
			set[filepath.Clean(p)] = true
		}
	}
	return func(p string) bool {
		for q := p; ; q = filepath.Dir(q) {
			if set[q] {
				return true
			}
			if q == filepath.Dir(q) {
				return false
			}
		}
	}
}

// coveredBy reports whether each path of need is at or below a path of
// ignore (see memo.ignored).
func coveredBy(need, ignore []string) bool {
	if len(need) == 0 {
		return true
	}
	ignored := ignoredBy(ignore)
	if ignored == nil {
		return false
	}
	for _, p := range need {
		if !ignored(p) {
			return false
		}
	}
	return true
}
