package landlock

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// carveTree builds:
//
//	root/a/b.txt
//	root/secret/{key,other,deep/x}
//	root/.env
//	root/file
//	root/link -> secret
func carveTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	for _, d := range []string{"a", "secret/deep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a/b.txt", "secret/key", "secret/other", "secret/deep/x", ".env", "file"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("secret", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	// Resolve the temp dir itself (it may sit behind a link, as on macOS).
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCarveOut(t *testing.T) {
	root := carveTree(t)
	j := func(ps ...string) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, filepath.Join(root, p))
		}
		return out
	}
	tests := []struct {
		name    string
		allowed []string
		denied  []string
		max     int
		want    []string
		wantErr error
	}{
		{name: "no deny", allowed: j(""), want: j("")},
		{name: "deny elsewhere", allowed: j(""), denied: []string{"/nonexistent-cordon/x"}, want: j("")},
		{name: "deny file two levels down", allowed: j(""), denied: j("secret/key"),
			want: j(".env", "a", "file", "secret/deep", "secret/other")},
		{name: "two denies", allowed: j(""), denied: j("secret", ".env"), want: j("a", "file")},
		{name: "deny equals allowed", allowed: j("a"), denied: j("a"), want: []string{}},
		{name: "deny above allowed", allowed: j("secret/deep"), denied: j("secret"), want: []string{}},
		{name: "allowed beside deny kept", allowed: j("a", "secret"), denied: j(".env"), want: j("a", "secret")},
		{name: "missing deny still carved", allowed: j(""), denied: j("secret/nothere"),
			want: j(".env", "a", "file", "secret/deep", "secret/key", "secret/other")},
		{name: "deny through a link", allowed: j(""), denied: j("link/key"),
			want: j(".env", "a", "file", "secret/deep", "secret/other")},
		{name: "relative allowed", allowed: []string{"rel"}, wantErr: errors.New("any")},
		{name: "relative denied", allowed: j(""), denied: []string{"rel"}, wantErr: errors.New("any")},
		// root has 5 entries, secret 3.
		{name: "bound exactly met", allowed: j(""), denied: j(".env"), max: 5, want: j("a", "file", "secret")},
		{name: "bound hit at top", allowed: j(""), denied: j(".env"), max: 4, wantErr: ErrTooManyEntries},
		{name: "bound hit deeper", allowed: j(""), denied: j("secret/key"), max: 7, wantErr: ErrTooManyEntries},
		{name: "bound met deeper", allowed: j(""), denied: j("secret/key"), max: 8,
			want: j(".env", "a", "file", "secret/deep", "secret/other")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CarveOut(tc.allowed, tc.denied, Limits{MaxEntries: tc.max})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				if errors.Is(tc.wantErr, ErrTooManyEntries) && !errors.Is(err, ErrTooManyEntries) {
					t.Fatalf("error %v, want ErrTooManyEntries", err)
				}
				if got != nil {
					t.Fatalf("got paths %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
