//go:build linux || darwin || freebsd || netbsd || openbsd

package weights

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps the whole file read-only. The returned release function
// unmaps it. Empty files are not mapped (mmap rejects length 0).
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
