//go:build !linux

package globscan

import "os"

// dirReader lists one directory with os.File.ReadDir, which takes the entry
// types from the directory itself (no stat per entry where the OS reports
// them).
type dirReader struct {
	f    *os.File
	ents []dent
}

// open starts listing path; below the root (follow false) a symlink is not
// followed where the OS allows it.
func (d *dirReader) open(path string, follow bool) error {
	var err error
	if follow {
		d.f, err = os.Open(path)
	} else {
		d.f, err = openDir(path)
	}
	return err
}

func (d *dirReader) close() { d.f.Close() }

// readBatch is how many entries are read at a time; limits are checked
// between batches so a huge directory cannot overrun them much.
const readBatch = 4096

// next returns the next batch of entries, or io.EOF.
func (d *dirReader) next() ([]dent, error) {
	es, err := d.f.ReadDir(readBatch)
	d.ents = d.ents[:0]
	for _, e := range es {
		d.ents = append(d.ents, dent{name: e.Name(), typ: e.Type()})
	}
	if len(es) > 0 {
		return d.ents, nil
	}
	return nil, err
}
