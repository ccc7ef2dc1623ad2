package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

// startServe runs `ndbg serve` with args in the background and waits for
// its two first lines: where it listens, and how to get in (the token's
// file, or the unix socket's rule). done receives its exit status.
func startServe(t *testing.T, args ...string) (where, access string, out, errOut *syncBuffer, done chan int) {
	t.Helper()
	out, errOut, done = &syncBuffer{}, &syncBuffer{}, make(chan int, 1)
	go func() {
		done <- run(context.Background(), append([]string{"serve"}, args...), out, errOut)
	}()
	for i := 0; access == ""; i++ { // the lines are written once SIGTERM is caught
		require.Less(t, i, 1000, "no listening lines: %s %s", out.String(), errOut.String())
		time.Sleep(10 * time.Millisecond)
		if _, rest, ok := strings.Cut(out.String(), "listening on "); ok && strings.Count(rest, "\n") >= 2 {
			where, rest, _ = strings.Cut(rest, " ")
			_, rest, _ = strings.Cut(rest, "ndbg serve: ")
			access, _, _ = strings.Cut(rest, "\n")
		}
	}
	return where, access, out, errOut, done
}

// tokenOf reads the token whose file the access line names, and checks
// that file: mode 0600, the user's, in a directory of mode 0700.
func tokenOf(t *testing.T, access string) (token, path string) {
	t.Helper()
	_, rest, ok := strings.Cut(access, "token in ")
	require.True(t, ok, "no token file named: %q", access)
	path, _, _ = strings.Cut(rest, " ")
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	require.Equal(t, uint32(0o600), st.Mode&0o7777, "token file mode %04o", st.Mode&0o7777)
	require.Equal(t, os.Geteuid(), int(st.Uid))
	require.NoError(t, syscall.Lstat(filepath.Dir(path), &st))
	require.Equal(t, uint32(0o700), st.Mode&0o7777, "token directory mode %04o", st.Mode&0o7777)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(data)), path
}

// TestServe starts `ndbg serve` on a free loopback port, asks it for its
// health with the token it wrote (and without: refused), starts a slow
// request and sends the process SIGTERM while it runs: the request
// completes, the command exits 0 and removes its token file.
func TestServe(t *testing.T) {
	privateRuntimeDir(t)
	url, access, out, errOut, done := startServe(t, "--listen", "127.0.0.1:0", "--backends", "real", "--timeout", "30s")
	token, tokenPath := tokenOf(t, access)
	require.Equal(t, os.Getenv("XDG_RUNTIME_DIR")+"/ndbg/serve-127.0.0.1-"+url[strings.LastIndex(url, ":")+1:]+".token", tokenPath)
	get := func(token string) (int, string) { return getHealth(t, url, token) }
	code, body := get("")
	require.Equal(t, http.StatusUnauthorized, code, body)
	code, body = get(token)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"status":"ok","sessions":0,"max_sessions":256,"backends":["real"]}`, body)

	type answer struct {
		code int
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req := fmt.Sprintf(`{"program": %q, "call": "f(2)"}`, "import time\n\ndef f(s):\n    time.sleep(s)\n    return s\n")
		hreq, err := http.NewRequest("POST", url+"/sessions", strings.NewReader(req))
		if err != nil {
			got <- answer{err: err}
			return
		}
		hreq.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(hreq)
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
	_, err := os.Stat(tokenPath)
	require.ErrorIs(t, err, os.ErrNotExist, "the token file is removed at exit")
}

// TestServeDefaultBackends: `ndbg serve` as the README gives it, with the
// embedded default model (trained on the DSL, not a CWM checkpoint),
// offers neural and real; cwm, which needs a CWM checkpoint, is left out
// of the default instead of refusing to start.
func TestServeDefaultBackends(t *testing.T) {
	privateRuntimeDir(t)
	url, access, out, errOut, done := startServe(t, "--listen", "127.0.0.1:0")
	token, _ := tokenOf(t, access)
	code, body := getHealth(t, url, token)
	require.Equal(t, http.StatusOK, code, body)
	require.JSONEq(t, `{"status":"ok","sessions":0,"max_sessions":256,"backends":["neural","real"],"model":"embedded default"}`, body)
	require.Contains(t, out.String(), "(backends neural,real)")
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	require.Equal(t, 0, <-done, errOut.String())
}

// TestServeUnix: on a unix socket the socket is 0600, the user's own
// requests need no token, and the socket is gone after shutdown.
func TestServeUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ndbg.sock")
	where, access, out, errOut, done := startServe(t, "--listen", "unix:"+path, "--backends", "real")
	require.Equal(t, "unix:"+path, where)
	require.Contains(t, access, fmt.Sprintf("only processes of uid %d can connect", os.Geteuid()))
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	require.Equal(t, uint32(0o600), st.Mode&0o7777)
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	resp, err := (&http.Client{Transport: tr}).Get("http://ndbg/health")
	require.NoError(t, err)
	resp.Body.Close()
	tr.CloseIdleConnections()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	require.Equal(t, 0, <-done, errOut.String())
	require.Contains(t, out.String(), "shut down")
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, os.ErrNotExist, "the socket is removed at exit")
}

// TestServeTokenFile: --token-file with the user's own file uses its
// token and keeps the file; a file others can read is refused, and so is
// --token-file with a unix socket.
func TestServeTokenFile(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "tok")
	const token = "my-own-token-0123456789abcdef0123456789"
	require.NoError(t, os.WriteFile(mine, []byte(token+"\n"), 0o600))
	url, access, _, errOut, done := startServe(t, "--listen", "127.0.0.1:0", "--backends", "real", "--token-file", mine)
	require.Contains(t, access, "token in "+mine)
	req, err := http.NewRequest("GET", url+"/health", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	require.Equal(t, 0, <-done, errOut.String())
	data, err := os.ReadFile(mine)
	require.NoError(t, err, "the user's token file is kept")
	require.Equal(t, token+"\n", string(data))

	require.NoError(t, os.Chmod(mine, 0o644))
	var out, eout bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"serve", "--listen", "127.0.0.1:0", "--backends", "real", "--token-file", mine}, &out, &eout))
	require.Contains(t, eout.String(), "mode 0644")
	require.NotContains(t, eout.String(), token)
	eout.Reset()
	require.Equal(t, 2, run(context.Background(), []string{"serve", "--listen", "unix:" + filepath.Join(dir, "s"), "--token-file", mine}, &out, &eout))
}

func TestServeUsage(t *testing.T) {
	privateRuntimeDir(t)
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

// privateRuntimeDir points $XDG_RUNTIME_DIR at a new directory of mode
// 0700, as a login's is (t.TempDir's is 0755 under the usual umask, which
// ndbg serve rightly does not use for a token).
func privateRuntimeDir(t *testing.T) {
	t.Helper()
	d := t.TempDir()
	require.NoError(t, os.Chmod(d, 0o700))
	t.Setenv("XDG_RUNTIME_DIR", d)
}

// getHealth asks url's /health with token (none when empty) and returns
// the status code and the body.
func getHealth(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/health", nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}
