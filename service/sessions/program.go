package sessions

import (
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/ndbg/ndbg/internal/regfile"
)

// ReadProgram reads a program a client names by path, with the server's
// rights (which are the client's own: every front end serves only its
// owner): a regular file (not a FIFO or a device, whose read could block
// or never end) of at most max bytes (the manager's MaxProgramBytes), of
// UTF-8 text without NUL bytes. An error says what is wrong and where
// (line and column) without quoting the file; its kind is Invalid for a
// path that cannot be read as a program, TooLarge past max.
func ReadProgram(path string, max int) (string, error) {
	if path == "" {
		return "", errorf(Invalid, "the program's path is empty")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", errorf(Invalid, "program %q: %v", path, err)
	}
	// O_NONBLOCK: opening a FIFO does not wait for a writer.
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", errorf(Invalid, "reading the program: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", errorf(Invalid, "reading the program: %v", err)
	}
	if !fi.Mode().IsRegular() {
		kind := "not a regular file"
		switch t := fi.Mode().Type(); {
		case t&os.ModeDir != 0:
			kind = "a directory"
		case t&os.ModeNamedPipe != 0:
			kind = "a FIFO"
		case t&os.ModeDevice != 0:
			kind = "a device"
		case t&os.ModeSocket != 0:
			kind = "a socket"
		}
		return "", errorf(Invalid, "program %s is %s: want a Python file", abs, kind)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return "", errorf(Invalid, "reading the program %s: %v", abs, err)
	}
	if len(data) > max {
		return "", errorf(TooLarge, "program %s is larger than the limit of %d bytes (--max-program)", abs, max)
	}
	if where, bad := regfile.NotText(data); bad {
		return "", errorf(Invalid, "program %s is not a Python source file: %s (ndbg reads UTF-8 sources)", abs, where)
	}
	return string(data), nil
}
