package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
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
// health, starts a slow request and sends the process SIGTERM while it
// runs: the request completes, and the command exits 0.
func TestServe(t *testing.T) {
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--backends", "real", "--timeout", "30s"}, &out, &errOut)
	}()
	var url string
	for i := 0; url == ""; i++ { // the line is written once SIGTERM is caught
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

	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req := fmt.Sprintf(`{"program": %q, "call": "f(2)"}`, "import time\n\ndef f(s):\n    time.sleep(s)\n    return s\n")
		resp, err := http.Post(url+"/sessions", "application/json", strings.NewReader(req))
		if err != nil {
			got <- answer{err: err}
			return
		}
		resp.Body.Close()
		got <- answer{code: resp.StatusCode}
	}()
	time.Sleep(500 * time.Millisecond) // the request is in flight: its program sleeps 2 s
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	a := <-got
	require.NoError(t, a.err)
	require.Equal(t, http.StatusCreated, a.code)
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
