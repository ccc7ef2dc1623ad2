//go:build linux || darwin || freebsd || netbsd || openbsd

package weights

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenIsLazy opens a sparse 4 GiB checkpoint: with mmap, opening it and
// taking a zero-copy view must neither read nor allocate the data.
func TestOpenIsLazy(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("a 4 GiB mapping needs a 64-bit address space")
	}
	rows, cols := int64(65536), int64(32768) // 4 GiB of BF16
	// A header for one huge tensor, then the file extended sparsely.
	hdr := `{"huge":{"dtype":"BF16","shape":[65536,32768],"data_offsets":[0,4294967296]}}`
	for (8+len(hdr))%8 != 0 {
		hdr += " "
	}
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.WriteFile(path, rawFile(hdr, 0), 0o644))
	require.NoError(t, os.Truncate(path, int64(8+len(hdr))+rows*cols*2))

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	file, err := OpenFile(path)
	require.NoError(t, err)
	defer file.Close()
	tt, err := file.Tensor("huge")
	require.NoError(t, err)
	v, err := tt.BF16()
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	require.EqualValues(t, rows*cols, len(v))
	assert.Equal(t, uint16(0), v[len(v)-1], "the last element reads (a sparse zero page)")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "no copy of the 4 GiB data")
}

// TestFIFODoesNotBlock plants named pipes where a checkpoint's files go:
// opening must fail at once rather than wait for a writer.
func TestFIFODoesNotBlock(t *testing.T) {
	for _, name := range []string{SingleFileName, ConfigName, IndexFileName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name != ConfigName {
				require.NoError(t, WriteConfig(dir, tinyConfig()))
			}
			require.NoError(t, syscall.Mkfifo(filepath.Join(dir, name), 0o644))
			done := make(chan error, 1)
			go func() {
				_, err := Open(dir)
				done <- err
			}()
			select {
			case err := <-done:
				assert.ErrorContains(t, err, "not a regular file")
			case <-time.After(5 * time.Second):
				t.Fatal("Open blocked on a FIFO")
			}
		})
	}
}

func TestConfigSizeLimit(t *testing.T) {
	dir := t.TempDir()
	big := append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), maxConfigSize)...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ConfigName), append(big, `"}`...), 0o644))
	_, err := LoadConfig(dir)
	assert.ErrorContains(t, err, "more than the 1048576 allowed")
}
