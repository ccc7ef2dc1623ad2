//go:build unix

package regfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRefusesWhatIsNotARegularFile: a FIFO (whose open would wait for a
// writer), a link to /dev/zero (which reads without end), a directory: each
// is refused at once, naming the path and what it is.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	zero := filepath.Join(dir, "zero")
	require.NoError(t, os.Symlink("/dev/zero", zero))
	for path, want := range map[string]string{
		fifo: "not a regular file (a named pipe)",
		zero: "not a regular file (a character device)",
		dir:  "not a regular file (a directory)",
	} {
		t.Run(filepath.Base(path), func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := Read(path, 1<<20)
				done <- err
			}()
			select {
			case err := <-done:
				assert.ErrorContains(t, err, path)
				assert.ErrorContains(t, err, want)
			case <-time.After(10 * time.Second):
				t.Fatal("Read blocked") // the test's only way to fail on a hang without hanging itself
			}
			_, _, err := Open(path)
			assert.ErrorContains(t, err, want)
			_, err = ReadFS(os.DirFS(dir), filepath.Base(path), path, 1<<20)
			if path == dir {
				_, err = ReadFS(os.DirFS(dir), ".", path, 1<<20)
			}
			assert.ErrorContains(t, err, want)
		})
	}
}

func TestSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.json")
	require.NoError(t, os.WriteFile(path, []byte("12345"), 0o644))
	data, err := Read(path, 5)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	_, err = Read(path, 4)
	assert.ErrorContains(t, err, path+": 5 bytes, more than the 4 allowed")

	fsys := fstest.MapFS{"f.json": {Data: []byte("12345")}}
	data, err = ReadFS(fsys, "f.json", "model/f.json", 5)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	data, err = ReadFS(fsys, "f.json", "model/f.json", -1)
	require.NoError(t, err)
	assert.Equal(t, "12345", string(data))
	_, err = ReadFS(fsys, "f.json", "model/f.json", 4)
	assert.ErrorContains(t, err, "model/f.json: 5 bytes, more than the 4 allowed")
	_, err = ReadFS(fsys, "g.json", "model/g.json", 4)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "model/g.json")
	_, err = Read(filepath.Join(t.TempDir(), "nosuch"), 4)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

// TestNotText: where source text stops, by line, column and byte, never
// quoting the data; text (multi-byte UTF-8 included) is fine.
func TestNotText(t *testing.T) {
	for _, c := range []struct {
		data, where string
	}{
		{"x = 1\ny = '€'\n", ""},
		{"x = 1\nab\x00c\n", "line 2, column 3 (byte 9) holds a NUL byte"},
		{"\xff", "line 1, column 1 (byte 1) holds a byte that is not UTF-8"},
		{"é\n\xe2\x82", "line 2, column 1 (byte 4) holds a byte that is not UTF-8"},
	} {
		where, bad := NotText([]byte(c.data))
		if where != c.where || bad != (c.where != "") {
			t.Errorf("NotText(%q) = %q, %v; want %q", c.data, where, bad, c.where)
		}
	}
}
