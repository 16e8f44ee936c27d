package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository's top, from this package's directory.
const root = "../.."

// readmeMaxLines keeps the README a five-minute read; the rest is in docs/.
const readmeMaxLines = 400

// link matches a markdown link's target: [text](target); inlineCode an
// inline code span.
var (
	link       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCode = regexp.MustCompile("`[^`]*`")
)

// documents are the markdown files checked: the top-level ones and docs/.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	top := []string{"README.md", "SECURITY.md", "CHANGELOG.md"}
	var out []string
	for _, f := range top {
		out = append(out, filepath.Join(root, f))
	}
	return append(out, docs...)
}

// slug is the anchor GitHub gives a heading: lower case, punctuation but
// hyphens and underscores dropped, spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a markdown file, outside code fences.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(l, "#") {
			out[slug(strings.TrimLeft(l, "#"))] = true
		}
	}
	return out
}

// withoutCode drops fenced code blocks and inline code, where brackets
// are not links.
func withoutCode(text string) string {
	var b strings.Builder
	fence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(inlineCode.ReplaceAllString(l, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestLinks: every relative link of the documents names a file that
// exists, and its anchor, if any, a heading of that file.
func TestLinks(t *testing.T) {
	for _, doc := range documents(t) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			tb, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: link %q: %v", rel(doc), target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !anchors(string(tb))[anchor] {
				t.Errorf("%s: link %q: no heading with that anchor in %s", rel(doc), target, rel(path))
			}
		}
	}
}

// TestDocsReachable: every page of docs/ is linked from the README.
func TestDocsReachable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	for _, d := range docs {
		if !strings.Contains(string(b), "](docs/"+filepath.Base(d)) {
			t.Errorf("README.md does not link %s", rel(d))
		}
	}
}

// TestReadmeShort: the README is at most readmeMaxLines lines.
func TestReadmeShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move detail to docs/", n, readmeMaxLines)
	}
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}
