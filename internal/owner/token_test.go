package owner

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/otheruser"
)

// stat is path's mode bits and owner, not following a link.
func stat(t *testing.T, path string) (mode uint32, uid int) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	return st.Mode & 0o7777, int(st.Uid)
}

// TestNewTokenFile: a fresh 256-bit token in a file of mode 0600, owned by
// the user, in a directory of mode 0700 made for it; a second run
// replaces it; Remove removes it.
func TestNewTokenFile(t *testing.T) {
	syscall.Umask(0o022) // the usual umask; the file must be 0600 whatever it is
	dir := filepath.Join(t.TempDir(), "deeper", "ndbg")
	tf, err := NewTokenFile(dir, "serve.token")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "serve.token"), tf.Path)
	raw, err := hex.DecodeString(tf.Token)
	require.NoError(t, err)
	require.Len(t, raw, 32)
	data, err := os.ReadFile(tf.Path)
	require.NoError(t, err)
	require.Equal(t, tf.Token+"\n", string(data))
	mode, uid := stat(t, tf.Path)
	require.Equal(t, uint32(0o600), mode, "file mode %04o", mode)
	require.Equal(t, os.Geteuid(), uid)
	mode, uid = stat(t, dir)
	require.Equal(t, uint32(0o700), mode, "directory mode %04o", mode)
	require.Equal(t, os.Geteuid(), uid)

	again, err := NewTokenFile(dir, "serve.token")
	require.NoError(t, err, "an earlier run's file is replaced")
	require.NotEqual(t, tf.Token, again.Token)
	require.NoError(t, tf.Remove(), "the first file is gone already: nothing to do")
	_, err = os.Stat(again.Path)
	require.NoError(t, err, "Remove of a replaced file leaves the new one")
	require.NoError(t, again.Remove())
	_, err = os.Stat(again.Path)
	require.ErrorIs(t, err, os.ErrNotExist)

	_, err = NewTokenFile(dir, "../x")
	require.Error(t, err)
}

// TestNewTokenFileRefuses: a directory open to others, a symbolic link
// to a directory, or another user's directory is refused, and nothing is
// written there.
func TestNewTokenFileRefuses(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	require.NoError(t, os.Mkdir(open, 0o755))
	require.NoError(t, os.Chmod(open, 0o755))
	_, err := NewTokenFile(open, "t")
	require.ErrorContains(t, err, "mode 0755")
	_, err = os.Stat(filepath.Join(open, "t"))
	require.ErrorIs(t, err, os.ErrNotExist)

	private := filepath.Join(base, "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(private, link))
	_, err = NewTokenFile(link, "t")
	require.ErrorContains(t, err, "symbolic link")
	_, err = os.Stat(filepath.Join(private, "t"))
	require.ErrorIs(t, err, os.ErrNotExist)

	if os.Geteuid() == 0 {
		theirs := filepath.Join(base, "theirs")
		require.NoError(t, os.Mkdir(theirs, 0o700))
		require.NoError(t, os.Chown(theirs, otheruser.UID, otheruser.UID))
		_, err = NewTokenFile(theirs, "t")
		require.ErrorContains(t, err, "owned by uid 65534")
	}
}

// TestOpenTokenFile: the user's own file is read and kept; a missing one
// is written (0600) and removed on Remove; anything another user could
// read or replace is refused.
func TestOpenTokenFile(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine")
	tok := NewToken()
	require.NoError(t, os.WriteFile(mine, []byte(tok+"\n"), 0o600))
	tf, err := OpenTokenFile(mine)
	require.NoError(t, err)
	require.Equal(t, tok, tf.Token)
	require.NoError(t, tf.Remove())
	_, err = os.Stat(mine)
	require.NoError(t, err, "the user's file is kept")

	fresh := filepath.Join(dir, "fresh")
	tf, err = OpenTokenFile(fresh)
	require.NoError(t, err)
	mode, uid := stat(t, fresh)
	require.Equal(t, uint32(0o600), mode)
	require.Equal(t, os.Geteuid(), uid)
	require.Len(t, tf.Token, 64)
	require.NoError(t, tf.Remove())
	_, err = os.Stat(fresh)
	require.ErrorIs(t, err, os.ErrNotExist, "a file written here is removed")

	readable := filepath.Join(dir, "readable")
	require.NoError(t, os.WriteFile(readable, []byte(tok), 0o600))
	require.NoError(t, os.Chmod(readable, 0o640))
	_, err = OpenTokenFile(readable)
	require.ErrorContains(t, err, "mode 0640")

	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(mine, link))
	_, err = OpenTokenFile(link)
	require.ErrorContains(t, err, "symbolic link")

	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("secret"), 0o600))
	_, err = OpenTokenFile(short)
	require.ErrorContains(t, err, "fewer than 32")
	require.NotContains(t, err.Error(), "secret", "the file's content is not quoted")

	spaced := filepath.Join(dir, "spaced")
	require.NoError(t, os.WriteFile(spaced, []byte(tok+" "+tok), 0o600))
	_, err = OpenTokenFile(spaced)
	require.ErrorContains(t, err, "not printable ASCII")

	require.NoError(t, os.Mkdir(filepath.Join(dir, "adir"), 0o700))
	_, err = OpenTokenFile(filepath.Join(dir, "adir"))
	require.ErrorContains(t, err, "not a regular file")

	shared := filepath.Join(dir, "shared")
	require.NoError(t, os.Mkdir(shared, 0o777))
	require.NoError(t, os.Chmod(shared, 0o777))
	_, err = OpenTokenFile(filepath.Join(shared, "t"))
	require.ErrorContains(t, err, "another user could replace")
	require.NoError(t, os.Chmod(shared, 0o777|os.ModeSticky))
	tf, err = OpenTokenFile(filepath.Join(shared, "t"))
	require.NoError(t, err, "a sticky directory (like /tmp) protects the user's file")
	require.NoError(t, tf.Remove())

	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs")
		require.NoError(t, os.WriteFile(theirs, []byte(tok), 0o600))
		require.NoError(t, os.Chown(theirs, otheruser.UID, otheruser.UID))
		_, err = OpenTokenFile(theirs)
		require.ErrorContains(t, err, "owned by uid 65534")
	}
}

// TestDefaultDir: $XDG_RUNTIME_DIR when it is the user's and private,
// else a directory of its own in the cache directory (a runtime directory
// left from another user, or open to others, is not used), where a token
// file can be written even when the cache's ndbg directory, shared with
// other caches, is open to read.
func TestDefaultDir(t *testing.T) {
	run := t.TempDir()
	require.NoError(t, os.Chmod(run, 0o700))
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("XDG_RUNTIME_DIR", run)
	d, err := DefaultDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(run, "ndbg"), d)
	require.NoError(t, os.Chmod(run, 0o755))
	d, err = DefaultDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, "ndbg", "tokens"), d)
	t.Setenv("XDG_RUNTIME_DIR", "")
	d, err = DefaultDir()
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cache, "ndbg", "tokens"), d)
	if os.Geteuid() == 0 {
		require.NoError(t, os.Chmod(run, 0o700))
		require.NoError(t, os.Chown(run, otheruser.UID, otheruser.UID))
		t.Setenv("XDG_RUNTIME_DIR", run)
		d, err = DefaultDir()
		require.NoError(t, err)
		require.Equal(t, filepath.Join(cache, "ndbg", "tokens"), d, "another user's runtime directory")
	}
	cacheNdbg := filepath.Join(cache, "ndbg")
	require.NoError(t, os.MkdirAll(cacheNdbg, 0o755))
	require.NoError(t, os.Chmod(cacheNdbg, 0o755)) // as train/ and bench/ leave it
	t.Setenv("XDG_RUNTIME_DIR", "")
	d, err = DefaultDir()
	require.NoError(t, err)
	tf, err := NewTokenFile(d, "t")
	require.NoError(t, err)
	require.NoError(t, tf.Remove())
}
