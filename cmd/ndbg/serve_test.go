package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe to read while the command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestServe starts `ndbg serve` on a free loopback port, asks it for its
// health, and stops it as SIGTERM does (its context ends).
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--backends", "real"}, &out, &errOut)
	}()
	var url string
	for i := 0; url == ""; i++ {
		require.Less(t, i, 1000, "no listening line: %s %s", out.String(), errOut.String())
		time.Sleep(10 * time.Millisecond)
		if _, rest, ok := strings.Cut(out.String(), "listening on "); ok {
			url, _, _ = strings.Cut(rest, " ")
		}
	}
	resp, err := http.Get(url + "/health")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.JSONEq(t, `{"status":"ok","sessions":0,"max_sessions":256,"backends":["real"]}`, string(body))
	cancel()
	require.Equal(t, 0, <-done, errOut.String())
	require.Contains(t, out.String(), "shut down")
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--backends", "real,pdb"},
		{"--max-sessions", "0"},
		{"--request-timeout", "-1s"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, args...), &out, &errOut)
		require.Equal(t, 2, code, "%v: %s", args, errOut.String())
	}
}
