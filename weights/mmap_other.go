//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package weights

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the whole file into memory where mmap is unavailable.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to read", size)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return data, func() error { return nil }, nil
}
