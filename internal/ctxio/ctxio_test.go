package ctxio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// TestReadsThrough: under a live context the reader gives exactly what r
// gives, whatever the buffer sizes (iotest.TestReader checks Read's
// contract), and r's end.
func TestReadsThrough(t *testing.T) {
	text := strings.Repeat("a line of input\n", 1000)
	require.NoError(t, iotest.TestReader(Reader(context.Background(), strings.NewReader(text)), []byte(text)))
	got, err := io.ReadAll(Reader(context.Background(), iotest.OneByteReader(strings.NewReader(text))))
	require.NoError(t, err)
	require.Equal(t, text, string(got))
	_, err = io.ReadAll(Reader(context.Background(), iotest.ErrReader(io.ErrUnexpectedEOF)))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

// TestCancelUnblocks: a read waiting for input that never comes (a pipe
// nobody writes, as a prompt's stdin) returns the context's cause once it
// is cancelled, and every read after it too.
func TestCancelUnblocks(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	in := bufio.NewReader(Reader(ctx, pr))
	done := make(chan error, 1)
	go func() {
		_, err := in.ReadString('\n')
		done <- err
	}()
	stop := errors.New("SIGTERM")
	cancel(stop)
	require.ErrorIs(t, <-done, stop)
	_, err := in.ReadString('\n')
	require.ErrorIs(t, err, stop)
}

// TestInputBeforeCancel: lines written before the cancel are read whole.
func TestInputBeforeCancel(t *testing.T) {
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := bufio.NewReader(Reader(ctx, pr))
	go func() { io.WriteString(pw, "first\nsecond\n") }()
	for _, want := range []string{"first\n", "second\n"} {
		line, err := in.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	cancel()
	_, err := in.ReadString('\n')
	require.ErrorIs(t, err, context.Canceled)
	pw.Close()
}
