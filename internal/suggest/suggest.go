// Package suggest finds, among the names a command accepts, the one a
// mistyped word most likely meant: for "did you mean" in an error's one
// line. It owns the edit distance cordon compares names with (the
// config's keys and values too), and nothing else: the callers word the
// message and, where they differ, choose how near is near enough.
package suggest

import (
	"strconv"
	"strings"
)

// Closest returns the candidate nearest to word, if it is near enough to
// be a typo (an edit distance of at most a third of its length, and at
// least 1 allowed), or a candidate that word is a prefix of when only one
// is; else "".
func Closest(word string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := max(1, len(word)/3)
	var prefixed []string
	for _, c := range candidates {
		if strings.HasPrefix(c, word) && word != "" {
			prefixed = append(prefixed, c)
		}
		if d := Distance(word, c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= limit {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// Distance is the optimal string alignment distance of a and b, in runes:
// insertions, deletions, substitutions and transpositions of two
// neighbours (the commonest typo) cost one each.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Unknown words the refusal of word as a what (an "agent"), with the
// nearest of names if one is near (Closest), and the names to use: one
// line, for an error.
func Unknown(what, word string, names []string) string {
	use := "use one of " + strings.Join(names, ", ")
	switch {
	case word == "":
		return "no " + what + " named: " + use
	case Closest(word, names) != "":
		return "unknown " + what + " " + strconv.Quote(word) + " (did you mean " + Closest(word, names) + "?): " + use
	}
	return "unknown " + what + " " + strconv.Quote(word) + ": " + use
}
