package gitconfig

import (
	"slices"
	"testing"
)

// TestEdit: deleted keys go with their continuation lines, a header
// sharing a line with a deleted key stays, added keys come back from
// Parse exactly as given (quotes, backslashes, tabs, newlines, comment
// characters, a subsection with a quote), and the rest is byte for byte.
func TestEdit(t *testing.T) {
	in := "# top\n[core]\n\tbare = false\n\tfsmonitor = a \\\n b\n[remote \"o\"] url = x\n\tfetch = f\n"
	es, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var remove []Entry
	for _, e := range es {
		if e.Name == "fsmonitor" || e.Name == "url" {
			remove = append(remove, e)
		}
	}
	add := []Entry{
		{Section: "remote", Sub: `u"p`, HasSub: true, Name: "url", Value: "/a b/#c;d\\e\"f"},
		{Section: "remote", Sub: `u"p`, HasSub: true, Name: "fetch", Value: "+refs/heads/*:refs/remotes/up/*"},
		{Section: "user", Name: "email", Value: "\tx\ny"},
		{Section: "submodule", Sub: "m", HasSub: true, Name: "active", Bare: true},
	}
	out := Edit([]byte(in), remove, add)
	want := "# top\n[core]\n\tbare = false\n[remote \"o\"] \n\tfetch = f\n" +
		"[remote \"u\\\"p\"]\n\turl = \"/a b/#c;d\\\\e\\\"f\"\n\tfetch = \"+refs/heads/*:refs/remotes/up/*\"\n" +
		"[user]\n\temail = \"\\tx\\ny\"\n[submodule \"m\"]\n\tactive\n"
	if string(out) != want {
		t.Errorf("got:\n%q\nwant:\n%q", out, want)
	}
	got, err := Parse(out)
	if err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	var keys []string
	for _, e := range got {
		keys = append(keys, e.Key()+"="+e.Value)
	}
	wantKeys := []string{"core.bare=false", "remote.o.fetch=f", `remote.u"p.url=/a b/#c;d\e"f`, "remote.u\"p.fetch=+refs/heads/*:refs/remotes/up/*", "user.email=\tx\ny", "submodule.m.active="}
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("parsed back:\n%q\nwant:\n%q", keys, wantKeys)
	}
	if got := Edit([]byte("[a]\n\tb = c"), nil, []Entry{{Section: "d", Name: "e", Value: "f"}}); string(got) != "[a]\n\tb = c\n[d]\n\te = \"f\"\n" {
		t.Errorf("no final newline: %q", got)
	}
}
