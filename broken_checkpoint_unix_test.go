//go:build unix

package ndbg_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// brokenFiles are checkpoint files replaced by what is not a regular file:
// a FIFO (whose open waited for a writer, ignoring SIGTERM) and a link to
// /dev/zero (read until memory ran out).
func brokenFiles() []brokenCheckpoint {
	fifo := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, name), 0o644))
		}
	}
	zero := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, name)))
		}
	}
	var out []brokenCheckpoint
	for _, name := range []string{"tokenizer.json", "config.json", "model.safetensors"} {
		out = append(out,
			brokenCheckpoint{name: name + " is a FIFO", brk: fifo(name), want: []string{name + ": not a regular file (a named pipe)"}},
			brokenCheckpoint{name: name + " links to /dev/zero", brk: zero(name), want: []string{name + ": not a regular file (a character device)"}})
	}
	return out
}
