package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// maxLine bounds one record's line when reading (a record is a few hundred
// bytes; a path at most 4 KiB); a longer line is skipped (counted in
// ReadStats.Skipped).
const maxLine = 64 << 10

// Filter selects records for Read. Zero fields select everything.
type Filter struct {
	// Since drops records older than it.
	Since time.Time
	// Session keeps only the records of one session.
	Session string
	// Actions keeps only records with one of these actions.
	Actions []string
}

// keep says that r passes f.
func (f Filter) keep(r Record) bool {
	return !r.Timestamp.Before(f.Since) &&
		(f.Session == "" || r.SessionID == f.Session) &&
		(len(f.Actions) == 0 || slices.Contains(f.Actions, r.Action))
}

// ReadStats says what Read could not use.
type ReadStats struct {
	// Skipped counts lines that are not a record (a torn or edited line,
	// or one longer than 64 KiB).
	Skipped int
}

// Read returns the records of the log at path that pass f, the rotated
// generation (path+".1") first, ordered by time (records with the same time
// keep the order they were written in). A missing file holds no records;
// a line that is not a record is skipped and counted.
func Read(path string, f Filter) ([]Record, ReadStats, error) {
	var out []Record
	var st ReadStats
	for _, p := range []string{path + Rotated, path} {
		file, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, st, fmt.Errorf("audit: reading the log: %w", err)
		}
		out, err = readFrom(file, f, out, &st)
		file.Close()
		if err != nil {
			return nil, st, fmt.Errorf("audit: reading %s: %w", p, err)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Timestamp.Compare(b.Timestamp) })
	return out, st, nil
}

// readFrom appends the records of r that pass f to out.
func readFrom(r io.Reader, f Filter, out []Record, st *ReadStats) ([]Record, error) {
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			st.Skipped++
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			var rec Record
			if json.Unmarshal(line, &rec) != nil || rec.Timestamp.IsZero() || rec.Action == "" {
				st.Skipped++
			} else if f.keep(rec) {
				out = append(out, rec)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}
