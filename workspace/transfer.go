package workspace

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"unicode/utf8"
)

// FileData is one file to upload.
type FileData struct {
	// Path is the file to write.
	Path string `json:"path"`
	// Content is the file's content: text, or base64 when Base64 is set.
	Content string `json:"content"`
	// Base64 says Content is base64 (standard encoding) for binary data.
	Base64 bool `json:"base64,omitempty"`
}

// Upload writes several files. Every path is resolved and checked, and every
// content decoded and size-checked, before anything is written: a violation
// or a bad entry aborts the whole upload with nothing written. Each file is
// then written atomically, as WriteFile does; a failure while writing (a
// full disk) leaves the files written before it in place and returns their
// results with the error.
func (f *FS) Upload(files []FileData) ([]*WriteResult, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("upload: no files given")
	}
	type item struct {
		path, content string
	}
	items := make([]item, 0, len(files))
	seen := map[string]string{}
	for _, fd := range files {
		content, err := f.uploadCheck(fd, seen)
		if err != nil {
			return nil, err
		}
		items = append(items, item{fd.Path, content})
	}
	out := make([]*WriteResult, 0, len(items))
	for _, it := range items {
		// Each file is walked again and written by what that walk opened
		// (write checks it again); the first pass only validated.
		t, err := f.resolve("file-write", it.path)
		if err != nil {
			return out, err
		}
		r, err := f.write(t, it.content)
		t.close()
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// uploadCheck resolves and checks one file of an upload and returns its
// decoded content; seen maps the resolved paths met so far to their paths
// as given.
func (f *FS) uploadCheck(fd FileData, seen map[string]string) (string, error) {
	t, err := f.resolve("file-write", fd.Path)
	if err != nil {
		return "", err
	}
	defer t.close()
	if err := f.checkWrite(t); err != nil {
		return "", err
	}
	if t.rel == "." {
		return "", fmt.Errorf("upload %s: is a directory", quote(fd.Path))
	}
	if prev, dup := seen[fold(t.abs)]; dup {
		return "", fmt.Errorf("upload: %s and %s name the same file", quote(prev), quote(fd.Path))
	}
	seen[fold(t.abs)] = fd.Path
	content := fd.Content
	if fd.Base64 {
		b, err := base64.StdEncoding.DecodeString(fd.Content)
		if err != nil {
			return "", fmt.Errorf("upload %s: content is not valid base64: %w", quote(fd.Path), err)
		}
		content = string(b)
	}
	if int64(len(content)) > f.Limits.MaxWriteBytes {
		return "", fmt.Errorf("upload %s: content of %d bytes exceeds the %d-byte limit", quote(fd.Path), len(content), f.Limits.MaxWriteBytes)
	}
	if _, _, err := f.checkExisting(t); err != nil {
		return "", err
	}
	return content, nil
}

// Downloaded is one file returned by Download.
type Downloaded struct {
	// Path is the path as given.
	Path string `json:"path"`
	// Resolved is the resolved absolute path.
	Resolved string `json:"resolved"`
	// Size is the file's size in bytes.
	Size int64 `json:"size"`
	// Content is the file's content: text, or base64 when Base64 is set.
	Content string `json:"content"`
	// Base64 is set for binary content (a NUL byte or invalid UTF-8).
	Base64 bool `json:"base64,omitempty"`
	// Truncated is set when the content was cut to the byte budget (text is
	// cut on a UTF-8 boundary).
	Truncated bool `json:"truncated,omitempty"`
}

// Download reads several files. Every path is resolved and checked before
// any is read: a violation aborts the whole download. maxBytes is the budget
// of content bytes (before base64) over all files; 0 or less means
// Limits.MaxOutputBytes. Files past the budget are truncated.
func (f *FS) Download(paths []string, maxBytes int64) ([]*Downloaded, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("download: no paths given")
	}
	if maxBytes <= 0 {
		maxBytes = int64(f.Limits.MaxOutputBytes)
	}
	for _, p := range paths {
		t, err := f.resolve("file-read", p)
		if err != nil {
			return nil, err
		}
		err = f.checkRead("file-read", t)
		t.close()
		if err != nil {
			return nil, err
		}
	}
	left := maxBytes
	out := make([]*Downloaded, 0, len(paths))
	for _, p := range paths {
		// Each file is walked again, checked and read by what that walk
		// opened; the first pass only validated.
		t, data, _, trunc, err := f.readChecked(p)
		if err != nil {
			return nil, err
		}
		fi := &fileStat{st: t.st}
		d := &Downloaded{Path: t.user, Resolved: t.abs, Size: fi.Size(), Truncated: trunc}
		binary := bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data)
		if int64(len(data)) > left {
			d.Truncated = true
			if binary {
				data = data[:left]
			} else {
				data = []byte(truncUTF8(string(data), int(left)))
			}
		}
		left -= int64(len(data))
		if binary {
			d.Base64 = true
			d.Content = base64.StdEncoding.EncodeToString(data)
		} else {
			d.Content = string(data)
		}
		out = append(out, d)
	}
	return out, nil
}
