// Package regfile opens and reads the files ndbg takes from outside (a
// checkpoint's config.json, index, tokenizer.json and safetensors files)
// only when they are regular files, and the small ones only up to a size
// limit: a named pipe, a device or a link to one planted where a file
// belongs must neither block the reader (a FIFO's open waits for a writer,
// and ignores SIGTERM while it does) nor make it read without end (a link
// to /dev/zero). Each error names the path and what is wrong with it.
package regfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"unicode/utf8"
)

// Open opens the regular file at path for reading (symbolic links
// followed) and returns it with its size. It looks at what path is before
// opening it, opens without blocking (where the system allows: a FIFO
// swapped in between opens at once) and checks the opened file again, so
// that nothing but a regular file is ever read.
func Open(path string) (*os.File, int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := regular(path, st); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := regular(path, st); err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// Read reads the regular file at path, refusing one of more than max
// bytes.
func Read(path string, max int64) ([]byte, error) {
	f, size, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > max {
		return nil, tooLarge(path, size, max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > max { // it grew while read
		return nil, fmt.Errorf("%s: more than the %d bytes allowed", path, max)
	}
	return data, nil
}

// ReadFS reads the regular file name of fsys, refusing one of more than
// max bytes (max < 0: no limit). path names it in errors. The file system
// is asked what name is before it is read (a FIFO replaced for a regular
// file after that is read by fsys's own ReadFile: an fs.FS cannot be
// opened without blocking).
func ReadFS(fsys fs.FS, name, path string, max int64) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	if max >= 0 && st.Size() > max {
		return nil, tooLarge(path, st.Size(), max)
	}
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if max >= 0 && int64(len(data)) > max {
		return nil, fmt.Errorf("%s: more than the %d bytes allowed", path, max)
	}
	return data, nil
}

// regular returns an error unless st is a regular file's.
func regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s: not a regular file (%s)", path, kind(st.Mode()))
}

// kind names a file type that is not a regular file.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "mode " + m.String()
}

func tooLarge(path string, size, max int64) error {
	return fmt.Errorf("%s: %d bytes, more than the %d allowed", path, size, max)
}

// unwrapPath drops the *fs.PathError around err, whose path (the name
// inside the file system) the caller's message replaces.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// NotText says where data stops being source text (UTF-8 without NUL
// bytes), without quoting it: "line L, column C (byte B) holds a NUL byte"
// (or "a byte that is not UTF-8"); ok is false when all of data is text.
func NotText(data []byte) (where string, ok bool) {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == 0 || r == utf8.RuneError && n == 1 {
			what := "a byte that is not UTF-8"
			if r == 0 {
				what = "a NUL byte"
			}
			line := bytes.Count(data[:i], []byte("\n")) + 1
			col := i - (bytes.LastIndexByte(data[:i], '\n') + 1) + 1
			return fmt.Sprintf("line %d, column %d (byte %d) holds %s", line, col, i+1, what), true
		}
		i += n
	}
	return "", false
}
