//go:build unix

package regfile

import (
	"os"
	"syscall"
)

// openFlags open without waiting: a FIFO opened for reading otherwise
// blocks until a writer comes.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
