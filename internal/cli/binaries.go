package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/cordon-sandbox/cordon/internal/helperspec"
	"github.com/cordon-sandbox/cordon/internal/host/sibling"
)

// binaryStatus is one of the programs cordon runs from beside itself, as
// cordon status reports it.
type binaryStatus struct {
	// Name is the program's name: cordon-helper or cordon-mcp.
	Name string `json:"name"`
	// Role is what it is, as the text says it ("helper", "mcp server").
	Role string `json:"role"`
	// Path is where cordon looks for it.
	Path string `json:"path"`
	// Error says what is wrong with it and the fix; "" when it is usable.
	Error string `json:"error,omitempty"`
}

// binaries finds and checks the helper and the MCP server beside cordon,
// as cordon run and cordon mcp would.
func binaries() []binaryStatus {
	var out []binaryStatus
	for _, b := range []struct{ name, role string }{{helperspec.HelperBinary, "helper"}, {MCPBinary, "mcp server"}} {
		st := binaryStatus{Name: b.name, Role: b.role}
		p, err := sibling.Path(b.name)
		if err == nil {
			st.Path = p
			_, err = sibling.Open(p)
		}
		if err != nil {
			st.Error = strings.TrimPrefix(err.Error(), st.Path+" ")
		}
		out = append(out, st)
	}
	return out
}

// writeBinaries writes the text of cordon status about bs.
func writeBinaries(w io.Writer, bs []binaryStatus) error {
	if _, err := fmt.Fprintln(w, "Binaries beside cordon:"); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	for _, b := range bs {
		state := "(ok)"
		if b.Error != "" {
			state = b.Error
		}
		if _, err := fmt.Fprintf(w, "  %s: %s %s\n", b.Role, b.Path, state); err != nil {
			return fmt.Errorf("write status: %w", err)
		}
	}
	return nil
}
