package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// The JSON convention of every command (docs/json.md): a one-shot
// command's --json prints one JSON object on stdout (writeJSON); a stream
// (cordon violations --json) prints JSON Lines; cordon run, test and learn
// write their result to the file --json-out names (writeResultJSON),
// never into the command's own output.

// writeJSON writes v as one indented JSON object and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// errRunJSON is the answer to --json on cordon run, test and learn, whose
// standard output and error are the command's.
var errRunJSON = errors.New("--json would mix the result into the command's own output: name a file with --json-out FILE (or a descriptor, --json-out /dev/fd/3)")

// openResultJSON opens the file --json-out names (created or truncated;
// /dev/fd/N names a descriptor the caller opened) before the run, so that
// a path that cannot be written fails before anything runs.
func openResultJSON(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--json-out: %w", err)
	}
	return f, nil
}

// writeResultJSON writes v, the result of a run, as one JSON object and a
// newline to f, and closes it.
func writeResultJSON(f *os.File, v any) error {
	b, err := json.Marshal(v)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("--json-out %s: %w", f.Name(), err)
	}
	return nil
}
