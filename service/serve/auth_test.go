package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/owner"
	"github.com/ndbg/ndbg/internal/testsupport/otheruser"
)

// TestAuth: every route but GET /openapi.json refuses a request without
// the token, with another token, or with the token under another scheme:
// 401, a JSON error that says why, WWW-Authenticate, and nothing done (no
// session created, stepped, forked, edited or deleted). With the token
// the same requests work.
func TestAuth(t *testing.T) {
	ts, svc := start(t, Config{})
	id := create(t, ts, "real", prog, "f([1, None, 4])")
	wrong := testToken[:len(testToken)-1] + "X" // the same length, one character off
	bodies := map[string]string{
		"/sessions":                    fmt.Sprintf(`{"program": %q, "call": "f([1])", "backend": "real"}`, prog),
		"/sessions/{id}/actions":       `{"action": "step_into"}`,
		"/sessions/{id}/locals/{name}": `{"repr": "[9]"}`,
	}
	for _, auth := range []string{"", "Bearer " + wrong, "Bearer", "Bearer  ", "Basic " + testToken, testToken, "Bearer " + testToken + "x"} {
		for _, r := range svc.routes() {
			path := strings.NewReplacer("{id}", id, "{name}", "data", "{line}", "5").Replace(r.path)
			req, err := http.NewRequest(r.method, ts.URL+path, strings.NewReader(bodies[r.path]))
			require.NoError(t, err)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req) // not ts.Client(): it sends the token
			require.NoError(t, err)
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			if r.path == publicPath {
				require.Equal(t, http.StatusOK, resp.StatusCode, "the API's description is public")
				require.Equal(t, OpenAPI, data)
				continue
			}
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s %s with %q: %s", r.method, path, auth, data)
			require.Equal(t, `Bearer realm="ndbg serve"`, resp.Header.Get("WWW-Authenticate"))
			var v map[string]string
			require.NoError(t, json.Unmarshal(data, &v), "%s", data)
			require.Contains(t, v["error"], "token")
			require.NotContains(t, string(data), testToken, "the answer never shows the token")
		}
	}
	// Nothing was done: one session, where it was created, undeleted.
	code, v := call(t, ts, "GET", "/health", nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1.0, v["sessions"], "a refused request created or deleted a session")
	code, v = call(t, ts, "GET", "/sessions/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, code)
	require.Empty(t, v["steps"], "a refused action was taken")
	code, v = call(t, ts, "GET", "/sessions/"+id, nil)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, []any{}, v["breakpoints"], "a refused breakpoint was set")
	require.Equal(t, 0.0, v["steps"])

	// With the token: the same requests work.
	code, v = call(t, ts, "POST", "/sessions/"+id+"/actions", map[string]string{"action": "step_into"})
	require.Equal(t, http.StatusOK, code, "%v", v)
	code, _ = call(t, ts, "POST", "/sessions", bodies["/sessions"])
	require.Equal(t, http.StatusCreated, code)
	req, err := http.NewRequest("GET", ts.URL+"/health", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "bearer "+testToken) // the scheme is case-insensitive (RFC 9110)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	_, err = New(Config{Token: "short"})
	require.ErrorContains(t, err, "fewer than 32")
}

// serveUnix serves svc on a unix socket at path (owner.ListenUnix) until
// the test ends; log receives Serve's lines.
func serveUnix(t *testing.T, svc *Service, path string, log io.Writer) {
	t.Helper()
	ln, err := owner.ListenUnix(path)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, 10*time.Second, nil, log) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
}

// unixClient is an HTTP client that dials the unix socket at path.
func unixClient(path string) (*http.Client, *http.Transport) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	return &http.Client{Transport: tr}, tr
}

// lockedBuffer is a bytes.Buffer for a server's log, read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// TestUnixSocket: on a unix socket (mode 0600) the server's own user is
// served without a token; a service without a token refuses everything
// over TCP.
func TestUnixSocket(t *testing.T) {
	svc, err := New(Config{Backends: []string{Real}}) // no token: the socket is the only way in
	require.NoError(t, err)
	defer svc.Close()
	path := filepath.Join(t.TempDir(), "ndbg.sock")
	serveUnix(t, svc, path, io.Discard)
	var st syscall.Stat_t
	require.NoError(t, syscall.Lstat(path, &st))
	require.Equal(t, uint32(0o600), st.Mode&0o7777, "socket mode %04o", st.Mode&0o7777)
	require.Equal(t, os.Geteuid(), int(st.Uid))

	client, tr := unixClient(path)
	defer tr.CloseIdleConnections()
	body := fmt.Sprintf(`{"program": %q, "call": "f([1])", "backend": "real"}`, prog)
	resp, err := client.Post("http://ndbg/sessions", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", data)

	// The same service over TCP: nothing without the socket.
	ts := httptestServer(t, svc)
	resp, err = http.Get(ts + "/health")
	require.NoError(t, err)
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.Contains(t, string(data), "only over its unix socket")
	req, _ := http.NewRequest("GET", ts+"/health", nil)
	req.Header.Set("Authorization", "Bearer ")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "an empty token is no token")
}

// httptestServer serves svc's handler on loopback TCP (no unix socket, so
// no owner's connection) until the test ends, and returns its URL.
func httptestServer(t *testing.T, svc *Service) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- svc.Serve(ctx, ln, 10*time.Second, nil, nil) }()
	t.Cleanup(func() { cancel(); <-served })
	return "http://" + ln.Addr().String()
}

// attackScript, run by another user, sends one HTTP request (argv: the
// unix socket or host:port, the method, the path, the body) and prints
// whatever comes back, or the error that stopped it.
const attackScript = `
import socket, sys
addr, method, path, body = sys.argv[1:5]
try:
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX); s.connect(addr)
    else:
        host, port = addr.rsplit(":", 1); s = socket.create_connection((host, int(port)))
    s.sendall(("%s %s HTTP/1.1\r\nHost: ndbg\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (method, path, len(body.encode()), body)).encode())
    got = b""
    while True:
        b = s.recv(65536)
        if not b: break
        got += b
    print("GOT", repr(got))
except OSError as e:
    print("ERROR", type(e).__name__, e)
`

// TestOtherUser: another local user (uid 65534) cannot use a root-started
// server: on the unix socket it cannot connect (mode 0600), and even where
// the socket's mode would let it, the server closes its connection unread
// (peer credentials), saying so; over TCP it has no token. In every case no
// session is created, and the program it sent, which would read a file
// only root can read, never runs.
func TestOtherUser(t *testing.T) {
	py := otheruser.Python(t)
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("ROOT-ONLY-MARKER\n"), 0o600))
	theft := fmt.Sprintf(`{"program": %q, "backend": "real"}`, fmt.Sprintf("print(open(%q).read())\n", secret))

	svc, err := New(Config{Backends: []string{Real}, Token: testToken})
	require.NoError(t, err)
	defer svc.Close()
	var log lockedBuffer
	path := filepath.Join(otheruser.Dir(t), "ndbg.sock")
	serveUnix(t, svc, path, &log)
	url := httptestServer(t, svc)

	attack := func(addr string) string {
		t.Helper()
		cmd := exec.Command(py, "-c", attackScript, addr, "POST", "/sessions", theft)
		otheruser.Set(cmd)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.NotContains(t, string(out), "ROOT-ONLY-MARKER")
		return string(out)
	}
	out := attack(path)
	require.Contains(t, out, "PermissionError", "the socket's mode keeps it out")

	require.NoError(t, os.Chmod(path, 0o666)) // the mode no longer stops it: the peer check must
	out = attack(path)
	require.NotContains(t, out, "HTTP/", "the server answered another user")
	require.Regexp(t, `^(GOT b''|ERROR (BrokenPipeError|ConnectionResetError) .*)\n$`, out, "the connection is closed unread")
	require.Contains(t, log.String(), "refused a connection")
	require.Contains(t, log.String(), "uid 65534")

	out = attack(strings.TrimPrefix(url, "http://"))
	require.Contains(t, out, "401 Unauthorized")

	// The owner sees no session, and the same request of its own works
	// (the attack was refused, not broken).
	client, tr := unixClient(path)
	defer tr.CloseIdleConnections()
	resp, err := client.Get("http://ndbg/health")
	require.NoError(t, err)
	var h struct{ Sessions int }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&h))
	resp.Body.Close()
	require.Equal(t, 0, h.Sessions, "another user's request created a session")
	resp, err = client.Post("http://ndbg/sessions", "application/json", strings.NewReader(theft))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// TestOpenAPISecurity: openapi.json describes the bearer scheme, requires
// it everywhere by default, and exempts exactly the operations the
// handler serves without it (publicPath), each other one answering 401.
func TestOpenAPISecurity(t *testing.T) {
	var spec struct {
		Security   []map[string][]string `json:"security"`
		Components struct {
			SecuritySchemes map[string]struct{ Type, Scheme string } `json:"securitySchemes"`
		} `json:"components"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(OpenAPI, &spec))
	require.Equal(t, "http", spec.Components.SecuritySchemes["bearerAuth"].Type)
	require.Equal(t, "bearer", spec.Components.SecuritySchemes["bearerAuth"].Scheme)
	require.Equal(t, []map[string][]string{{"bearerAuth": {}}}, spec.Security)
	for path, ops := range spec.Paths {
		for m, raw := range ops {
			if m == "parameters" {
				continue
			}
			var op struct {
				Security  *[]map[string][]string     `json:"security"`
				Responses map[string]json.RawMessage `json:"responses"`
			}
			require.NoError(t, json.Unmarshal(raw, &op), "%s %s", m, path)
			public := op.Security != nil && len(*op.Security) == 0
			require.Equal(t, path == publicPath, public, "%s %s: public in the description, or in the handler, not both", m, path)
			_, has401 := op.Responses["401"]
			require.Equal(t, !public, has401, "%s %s: a 401 answer is described where the token is needed", m, path)
		}
	}
}
