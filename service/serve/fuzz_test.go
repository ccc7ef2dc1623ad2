package serve

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzHandler sends arbitrary bodies to every operation that reads one (on
// a live session, a missing one, and a path that is no route): the answer
// is never a 5xx, since the mistake is the client's, always JSON, and a
// refusal always says why; without the token (the target's high bit) it is
// always 401.
func FuzzHandler(f *testing.F) {
	svc, err := New(Config{Limits: Limits{MaxBodyBytes: 4096, MaxSessions: 8}, Token: testToken})
	require.NoError(f, err)
	f.Cleanup(svc.Close)
	inner := svc.Handler()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // the owner's requests
		r.Header.Set("Authorization", "Bearer "+testToken)
		inner.ServeHTTP(w, r)
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/sessions",
		bytes.NewReader([]byte(`{"program": "def f(x):\n    y = x + 1\n    return y\n", "call": "f(1)", "backend": "real"}`))))
	require.Equal(f, http.StatusCreated, rec.Code, rec.Body.String())
	var v struct{ ID string }
	require.NoError(f, json.Unmarshal(rec.Body.Bytes(), &v))
	targets := []struct{ method, path string }{
		{"POST", "/sessions/" + v.ID + "/actions"},
		{"PUT", "/sessions/" + v.ID + "/locals/x"},
		{"POST", "/sessions"},
		{"PUT", "/sessions/" + v.ID + "/breakpoints/2"},
		{"POST", "/sessions/ffff/actions"},
		{"DELETE", "/nowhere"},
	}
	for _, seed := range []string{`{"action": "step_into"}`, `{"action": "inv_step_into"}`, `{"action": "breakpoint:3"}`,
		`{"action": "continue:1,2,3"}`, `{"repr": "2"}`, `{"program": "def f(:", "call": "f()"}`,
		`{"program": "x = 1", "call": "f(", "backend": "neural"}`, `{"sampling": {"top_p": 2}}`,
		`{"action": "step_over"} x`, `{"action": 1e999}`, "\xff\xfe", `{"program": null}`} {
		for i := range targets {
			f.Add(uint8(i), []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		tg := targets[int(target&0x7f)%len(targets)]
		rec := httptest.NewRecorder()
		if target&0x80 != 0 { // without the token: refused, whatever the body
			inner.ServeHTTP(rec, httptest.NewRequest(tg.method, tg.path, bytes.NewReader(body)))
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("%s %s %q without the token: %d %s", tg.method, tg.path, body, rec.Code, rec.Body.String())
			}
			return
		}
		h.ServeHTTP(rec, httptest.NewRequest(tg.method, tg.path, bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", tg.method, tg.path, body, rec.Code, rec.Body.String())
		}
		var ans map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
			t.Fatalf("%s %s %q: the answer is not JSON: %q", tg.method, tg.path, body, rec.Body.String())
		}
		if msg, _ := ans["error"].(string); rec.Code >= 400 && msg == "" {
			t.Fatalf("%s %s %q: %d without an error message: %s", tg.method, tg.path, body, rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusCreated { // keep within the session limit
			id, _ := ans["id"].(string)
			h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/sessions/"+id, nil))
		}
	})
}
