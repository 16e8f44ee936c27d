//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/sandbox"
)

// Example runs one command confined to a workspace: it can write there,
// cannot read what lies beside it (here a key in the directory above the
// workspace; the home directory's secrets likewise), and its result
// carries its exit status. (A host program calls sandbox.Init first in main; this
// package's tests do it in TestMain.)
func Example() {
	home, err := os.MkdirTemp("", "example-home-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(home)
	ws := filepath.Join(home, "proj")
	_ = os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	_ = os.MkdirAll(ws, 0o755)
	_ = os.WriteFile(filepath.Join(home, ".ssh", "id_ed25519"), []byte("PRIVATE KEY\n"), 0o600)

	sb, err := sandbox.New(sandbox.WithWorkspace(ws), sandbox.WithWritePaths(ws))
	if err != nil {
		panic(err)
	}
	defer sb.Close()
	var out strings.Builder
	cmd := exec.Command("sh", "-c", `cat "$1" 2>/dev/null || echo "the key is hidden"; echo built > out.txt && cat out.txt; exit 3`,
		"sh", filepath.Join(home, ".ssh", "id_ed25519"))
	cmd.Stdout = &out
	res, err := sb.Run(context.Background(), cmd)
	if err != nil {
		panic(err)
	}
	fmt.Print(out.String())
	fmt.Println("exit status", res.ExitCode)
	// Output:
	// the key is hidden
	// built
	// exit status 3
}
