package gitconfig

import (
	"bytes"
	"strings"
)

// Edit returns data with the lines of remove deleted (continuation lines
// too; a key that shares its line with a section header leaves the header)
// and the entries of add appended at the end, each under a section header
// of its own as git writes one ([section] or [section "sub"]), values
// quoted and escaped so that Parse reads them back as they are. Everything
// else is kept byte for byte. It is the writer of the one parser: add's
// entries need only Section, Sub, HasSub, Name, Value and Bare.
func Edit(data []byte, remove, add []Entry) []byte {
	drop := map[int]int{} // line -> column where the deletion starts
	for _, e := range remove {
		for l := e.Line; l <= e.EndLine; l++ {
			if _, ok := drop[l]; !ok {
				drop[l] = 0
			}
		}
		drop[e.Line] = e.Col
	}
	var out bytes.Buffer
	out.Grow(len(data) + 64*len(add))
	for i, ln := range bytes.SplitAfter(data, []byte("\n")) {
		if len(ln) == 0 {
			continue
		}
		col, ok := drop[i]
		if !ok {
			out.Write(ln)
			continue
		}
		if col > 0 && col < len(ln) {
			out.Write(ln[:col])
			out.WriteString("\n")
		}
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteString("\n")
	}
	for i, e := range add {
		if i == 0 || e.Section != add[i-1].Section || e.HasSub != add[i-1].HasSub || e.Sub != add[i-1].Sub {
			out.WriteString(Header(e))
		}
		out.WriteString(KeyLine(e))
	}
	return out.Bytes()
}

// Header is the section header line of e: [section] or [section "sub"],
// the subsection's quote and backslash escaped.
func Header(e Entry) string {
	if !e.HasSub {
		return "[" + e.Section + "]\n"
	}
	sub := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(e.Sub)
	return "[" + e.Section + ` "` + sub + "\"]\n"
}

// KeyLine is the line of e's key and value under its header: the value
// quoted, with backslash, quote, newline, tab and backspace escaped; a
// bare key alone.
func KeyLine(e Entry) string {
	if e.Bare {
		return "\t" + e.Name + "\n"
	}
	v := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\b", `\b`).Replace(e.Value)
	return "\t" + e.Name + ` = "` + v + "\"\n"
}
