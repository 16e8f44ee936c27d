// Package credential holds what the host-side proxy needs to let a
// confined command use a secret it never sees: the per-run placeholder
// that stands for the secret inside (Placeholder), the per-run
// certificate authority whose leaves the proxy presents for the
// credentials' hosts (CA), and the swap itself, the decision for one
// request and the rewriting of its allowed headers (Binding).
//
// It owns those three ideas and nothing else: it never reads a secret
// from anywhere (the launcher resolves it), never opens a connection
// (package netproxy does) and never writes a file. No value it holds, the
// secret or the CA's key, appears in an error, a String or a Decision.
package credential

import (
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// knownPrefixes are the fixed prefixes of tokens whose tools check a
// token's form (gh, npm, twine), longest first where one begins another.
var knownPrefixes = []string{
	"github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
	"npm_", "pypi-", "glpat-", "sk-ant-", "sk-proj-", "sk-", "xoxb-", "xoxp-", "hf_",
}

// minRandom is the fewest random characters a placeholder has: one must
// never occur by chance in a request, whatever the secret's length.
const minRandom = 20

const (
	lower  = "abcdefghijklmnopqrstuvwxyz"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits = "0123456789"
)

// Placeholder returns a new random stand-in for secret with its shape:
// the same known prefix (ghp_, github_pat_, npm_, ...), the same length,
// the separators (anything not a letter or digit) where the secret has
// them, and random letters and digits from the classes the secret uses
// elsewhere. Nothing else of the secret is used: the placeholder is
// never derived from its value. A secret with fewer than 20 letters and
// digits past its prefix gets 20 (its length is then not kept).
func Placeholder(secret string) (string, error) {
	if secret == "" {
		return "", errors.New("credential: an empty secret has no placeholder")
	}
	prefix := ""
	for _, p := range knownPrefixes {
		if strings.HasPrefix(secret, p) && len(secret) > len(p) {
			prefix = p
			break
		}
	}
	rest := secret[len(prefix):]
	alphabet := alphabetOf(rest)
	alnum := 0
	for i := 0; i < len(rest); i++ {
		if isAlnum(rest[i]) || rest[i] >= 0x80 {
			alnum++
		}
	}
	var b strings.Builder
	b.WriteString(prefix)
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if isAlnum(c) || c >= 0x80 {
			r, err := randomChar(alphabet)
			if err != nil {
				return "", err
			}
			b.WriteByte(r)
			continue
		}
		b.WriteByte(c)
	}
	for extra := minRandom - alnum; extra > 0; extra-- {
		r, err := randomChar(alphabet)
		if err != nil {
			return "", err
		}
		b.WriteByte(r)
	}
	p := b.String()
	if strings.Contains(p, secret) || strings.Contains(secret, p) {
		// A chance of 62^-20 at most: try again rather than hand out a
		// placeholder the secret contains.
		return Placeholder(secret)
	}
	return p, nil
}

// alphabetOf is what a placeholder's random characters are drawn from:
// hexadecimal digits of one case for a hexadecimal secret, else the
// classes (lower case, upper case, digits) the secret uses, or all three
// when it uses none.
func alphabetOf(rest string) string {
	switch {
	case isHex(rest, "abcdef"):
		return digits + "abcdef"
	case isHex(rest, "ABCDEF"):
		return digits + "ABCDEF"
	}
	a := ""
	for _, class := range []string{lower, upper, digits} {
		if strings.ContainsAny(rest, class) {
			a += class
		}
	}
	if a == "" {
		a = lower + upper + digits
	}
	return a
}

// isHex says whether every letter and digit of s is a digit or one of
// letters, and s has at least one digit and one such letter.
func isHex(s, letters string) bool {
	var digit, letter bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case strings.IndexByte(letters, c) >= 0:
			letter = true
		case isAlnum(c):
			return false
		}
	}
	return digit && letter
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// randomChar is a uniformly random byte of alphabet.
func randomChar(alphabet string) (byte, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
	if err != nil {
		return 0, fmt.Errorf("credential: making a placeholder: %w", err)
	}
	return alphabet[n.Int64()], nil
}
