package cli

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --threads and --device are parsed once, here, for every command: bad
// values are usage errors (exit status 2) that name the flag.
func TestComputeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string // "" for none
	}{
		{nil, ""},
		{[]string{"--device", "cpu", "--threads", "3"}, ""},
		{[]string{"--device", "cuda"}, ""}, // a name it knows; whether it is built in shows when opened
		{[]string{"--device", "tpu"}, `--device "tpu": want cpu, cuda, auto`},
		{[]string{"--threads", "-1"}, "--threads -1 cannot be negative"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var comp Compute
		comp.Register(fs)
		require.NoError(t, Parse(fs, c.args))
		err := comp.Check()
		if c.msg == "" {
			require.NoError(t, err, "%v", c.args)
			continue
		}
		require.ErrorContains(t, err, c.msg, "%v", c.args)
		code, print := ExitStatus(err)
		require.Equal(t, 2, code)
		require.True(t, print)
	}
	var comp Compute
	comp.Register(flag.NewFlagSet("x", flag.ContinueOnError))
	require.Equal(t, "auto", comp.Device, "the default")
}

// ReadFile reads a program or item only from a regular file of at most
// MaxFile bytes: a FIFO (whose open would wait for a writer and, before
// regfile, ignored SIGTERM) and a device (/dev/zero, read without end)
// are refused at once, naming the path and what it is.
func TestReadFileRefusesWhatIsNotAFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(ctx, "the program", fifo)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "reading the program: "+fifo+": not a regular file (a named pipe)")
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile blocked on a FIFO")
	}
	_, err := ReadFile(ctx, "the program", "/dev/zero")
	require.ErrorContains(t, err, "/dev/zero: not a regular file (a character device)")

	big := filepath.Join(dir, "big.py")
	require.NoError(t, os.WriteFile(big, make([]byte, MaxFile+1), 0o600))
	_, err = ReadFile(ctx, "the program", big)
	require.ErrorContains(t, err, "more than the 8388608 allowed")

	ok := filepath.Join(dir, "ok.py")
	require.NoError(t, os.WriteFile(ok, []byte("x = 1\n"), 0o600))
	src, err := ReadFile(ctx, "the program", ok)
	require.NoError(t, err)
	require.Equal(t, "x = 1\n", src)
}

// ReadFile refuses a program that is not text, saying where without
// quoting it.
func TestReadFileRefusesWhatIsNotText(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"nul.py": "x = 1\ny = 2\x00\n", "latin1.py": "x = 1\ny = '\xff'\n"} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
		_, err := ReadFile(context.Background(), "the program", path)
		require.ErrorContains(t, err, "the program is not UTF-8 text without NUL bytes: line 2, column", name)
	}
}
