package owner

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// MinTokenLen is the fewest characters a token read from a file may have:
// 32 hex digits are 128 bits.
const MinTokenLen = 32

// maxTokenFile bounds what is read of a token file.
const maxTokenFile = 4096

// NewToken returns a fresh random token: 256 bits from crypto/rand, in
// hex.
func NewToken() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// TokenFile is a bearer token and the file that holds it, for the owner's
// clients to read.
type TokenFile struct {
	Path  string // absolute
	Token string

	created bool // written here: Remove removes it
}

// Remove removes the file if this process wrote it (a file the user gave,
// holding their own token, is kept) and it still holds this token (a later
// run may have replaced it).
func (f *TokenFile) Remove() error {
	if !f.created {
		return nil
	}
	fd, err := syscall.Open(f.Path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil // gone already
	}
	file := os.NewFile(uintptr(fd), f.Path)
	data, err := io.ReadAll(io.LimitReader(file, maxTokenFile))
	file.Close()
	if err != nil || strings.TrimSpace(string(data)) != f.Token {
		return nil // replaced: not ours to remove
	}
	if err := os.Remove(f.Path); err != nil {
		return fmt.Errorf("owner: removing the token file: %w", err)
	}
	return nil
}

// DefaultDir is where a server keeps its token when not told: ndbg in
// $XDG_RUNTIME_DIR (the user's private runtime directory, emptied at
// logout) when that is a directory of the current user's closed to others
// (as the XDG specification requires; `su` keeps another user's), else
// ndbg/tokens in the user's cache directory ($XDG_CACHE_HOME or ~/.cache:
// its ndbg directory holds other caches, open to read, so the tokens get
// one of their own).
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR && int(st.Uid) == os.Geteuid() && st.Mode&0o077 == 0 {
			return filepath.Join(d, "ndbg"), nil
		}
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("owner: no directory for the token (neither $XDG_RUNTIME_DIR nor a home directory is set): %w", err)
	}
	return filepath.Join(d, "ndbg", "tokens"), nil
}

// NewTokenFile writes a fresh token (NewToken) to dir/name, replacing a
// file left there by an earlier run. dir is created with mode 0700 when
// absent (with its parents), and must be a directory, not a symbolic link,
// owned by the current user and closed to everyone else (mode 0700 or
// less); otherwise it is refused, since another user could read or replace
// the token. The file is created with mode 0600, never through a symbolic
// link, and only ever by this call (O_EXCL), in the directory it checked
// (by descriptor, so the directory cannot be swapped in between).
func NewTokenFile(dir, name string) (*TokenFile, error) {
	if name == "" || strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return nil, fmt.Errorf("owner: token file name %q: want a plain file name", name)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("owner: token directory %q: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("owner: token directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("owner: token directory: %w", err)
	}
	fd, st, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		return nil, fmt.Errorf("owner: token directory %s is owned by uid %d with mode %04o: want uid %d and mode 0700, so that no one else can read or replace the token (fix it, or give --token-file)", dir, st.Uid, st.Mode&0o7777, os.Geteuid())
	}
	// The directory is the user's alone: whatever is at name is an earlier
	// run's file (or the user's), and no one else can put one back.
	if err := unlinkat(fd, name); err != nil && !errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("owner: replacing the token file %s: %w", filepath.Join(dir, name), err)
	}
	return writeToken(fd, dir, name)
}

// OpenTokenFile is a token file the user names (--token-file path): when
// path exists it holds the user's token, which is read and kept there;
// when it does not, a fresh token is written to it (mode 0600, O_EXCL) and
// Remove removes it. Refused: a path that is a symbolic link or not a
// regular file, a file not owned by the current user or open to its group
// or others (mode 0600 or less), a directory holding it that another user
// could replace it in (owned by another user than the current one or root,
// or writable by group or others without the sticky bit), and a token
// shorter than MinTokenLen or with characters outside printable ASCII.
func OpenTokenFile(path string) (*TokenFile, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("owner: token file %q: %w", path, err)
	}
	dir, name := filepath.Split(path)
	fd, st, err := openDir(dir)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	if (int(st.Uid) != os.Geteuid() && st.Uid != 0) || (st.Mode&0o022 != 0 && st.Mode&syscall.S_ISVTX == 0) {
		return nil, fmt.Errorf("owner: token file %s: its directory is owned by uid %d with mode %04o: another user could replace the file (want a directory of yours or root's, not writable by others unless sticky, like /tmp)", path, st.Uid, st.Mode&0o7777)
	}
	f, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, syscall.ENOENT):
		return writeToken(fd, filepath.Clean(dir), name)
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("owner: token file %s is a symbolic link: refused (name the file itself)", path)
	case err != nil:
		return nil, fmt.Errorf("owner: token file %s: %w", path, err)
	}
	file := os.NewFile(uintptr(f), path)
	defer file.Close()
	var fst syscall.Stat_t
	if err := syscall.Fstat(f, &fst); err != nil {
		return nil, fmt.Errorf("owner: token file %s: %w", path, err)
	}
	switch {
	case fst.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return nil, fmt.Errorf("owner: token file %s is not a regular file", path)
	case int(fst.Uid) != os.Geteuid() || fst.Mode&0o077 != 0:
		return nil, fmt.Errorf("owner: token file %s is owned by uid %d with mode %04o: want uid %d and mode 0600 (chmod 600), so that no one else can read it", path, fst.Uid, fst.Mode&0o7777, os.Geteuid())
	}
	data, err := io.ReadAll(io.LimitReader(file, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("owner: reading the token file %s: %w", path, err)
	}
	if len(data) > maxTokenFile {
		return nil, fmt.Errorf("owner: token file %s is larger than %d bytes: want one token", path, maxTokenFile)
	}
	tok := strings.TrimSpace(string(data))
	if err := checkToken(tok); err != nil {
		return nil, fmt.Errorf("owner: token file %s: %w", path, err)
	}
	return &TokenFile{Path: path, Token: tok}, nil
}

// checkToken says why tok cannot be a bearer token (without quoting it).
func checkToken(tok string) error {
	if len(tok) < MinTokenLen {
		return fmt.Errorf("the token has %d characters, fewer than %d (write 32 random bytes in hex, e.g. head -c 32 /dev/urandom | xxd -p -c 64)", len(tok), MinTokenLen)
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < 0x21 || tok[i] > 0x7e {
			return fmt.Errorf("the token's character %d is not printable ASCII (spaces and control characters cannot travel in an Authorization header)", i+1)
		}
	}
	return nil
}

// writeToken creates name in the directory open as dirfd (the path dir)
// with a fresh token: O_EXCL, O_NOFOLLOW, mode 0600.
func writeToken(dirfd int, dir, name string) (*TokenFile, error) {
	path := filepath.Join(dir, name)
	f, err := syscall.Openat(dirfd, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("owner: creating the token file %s: %w", path, err)
	}
	file := os.NewFile(uintptr(f), path)
	tf := &TokenFile{Path: path, Token: NewToken(), created: true}
	err = syscall.Fchmod(f, 0o600) // the umask may have taken bits away; never added
	if err == nil {
		_, err = file.WriteString(tf.Token + "\n")
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unlinkat(dirfd, name)
		return nil, fmt.Errorf("owner: writing the token file %s: %w", path, err)
	}
	return tf, nil
}

// openDir opens dir (not through a symbolic link at its last component)
// and returns its descriptor and status.
func openDir(dir string) (int, syscall.Stat_t, error) {
	var st syscall.Stat_t
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			return -1, st, fmt.Errorf("owner: token directory %s is not a directory (or is a symbolic link): refused", dir)
		}
		return -1, st, fmt.Errorf("owner: token directory %s: %w", dir, err)
	}
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, st, fmt.Errorf("owner: token directory %s: %w", dir, err)
	}
	return fd, st, nil
}

func unlinkat(dirfd int, name string) error {
	return syscall.Unlinkat(dirfd, name)
}
