package trace

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/dsl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const goodResult = `{"t": "result", "id": 7, "status": "returned", "events": [` +
	`{"e": 1, "l": 1, "d": 0, "f": 1, "n": "f", "a": ["x", "1"]}, ` +
	`{"e": 2, "l": 2, "d": 0, "f": 1, "n": "f", "a": ["x", "1"]}, ` +
	`{"e": 3, "l": 2, "d": 0, "f": 1, "n": "f", "a": ["x", "1", "y", "'\u00e9'"], "r": "2"}], ` +
	`"ret": "2", "exc": null, "stdout": "aGk=", "stdout_trunc": false, "msg": "", "line": 0}`

func TestDecodeResult(t *testing.T) {
	w, err := decodeResult([]byte(goodResult))
	require.NoError(t, err)
	res, err := w.result("3.11")
	require.NoError(t, err)
	assert.Equal(t, 7, w.ID)
	assert.Equal(t, "2", res.Return)
	assert.Equal(t, []byte("hi"), res.Stdout)
	require.Len(t, res.Events, 3)
	assert.Equal(t, Event{Kind: dsl.Return, Line: 2, Depth: 0, Frame: 1, Func: "f",
		Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "y", Repr: "'é'"}}, Value: "2"}, res.Events[2])
}

// TestDecodeOutputCounts: each event's output counts, sent only where they
// changed, carry over to the events after; stderr decodes as stdout does;
// a count that goes down is a protocol error.
func TestDecodeOutputCounts(t *testing.T) {
	line := `{"t": "result", "id": 1, "status": "returned", "events": [` +
		`{"e": 1, "l": 1, "d": 0, "f": 1, "n": "f", "a": []}, ` +
		`{"e": 2, "l": 2, "d": 0, "f": 1, "n": "f", "a": [], "o": 3}, ` +
		`{"e": 3, "l": 2, "d": 0, "f": 1, "n": "f", "a": [], "r": "None", "x": 2}], ` +
		`"ret": "None", "exc": null, "stdout": "aGkK", "stdout_trunc": false, "stderr": "ZQo=", "stderr_trunc": true, "msg": "", "line": 0}`
	w, err := decodeResult([]byte(line))
	require.NoError(t, err)
	res, err := w.result("3.11")
	require.NoError(t, err)
	assert.Equal(t, [][2]int{{0, 0}, {3, 0}, {3, 2}}, [][2]int{{res.Events[0].Stdout, res.Events[0].Stderr},
		{res.Events[1].Stdout, res.Events[1].Stderr}, {res.Events[2].Stdout, res.Events[2].Stderr}})
	assert.Equal(t, "hi\n", string(res.Stdout))
	assert.Equal(t, "e\n", string(res.Stderr))
	assert.True(t, res.StderrTruncated)

	w, err = decodeResult([]byte(strings.Replace(line, `"x": 2`, `"o": 1`, 1)))
	require.NoError(t, err)
	_, err = w.result("3.11")
	requireKind(t, err, ErrProtocol)
	_, err = decodeResult([]byte(strings.Replace(line, `"o": 3`, `"o": -1`, 1)))
	require.Error(t, err)
}

func TestDecodeResultRejects(t *testing.T) {
	for name, mutate := range map[string]func(string) string{
		"unknown field":    func(s string) string { return strings.Replace(s, `"msg"`, `"mgs"`, 1) },
		"trailing data":    func(s string) string { return s + " {}" },
		"non-ASCII":        func(s string) string { return strings.Replace(s, `\u00e9`, "é", 1) },
		"bad status":       func(s string) string { return strings.Replace(s, `"returned"`, `"fine"`, 1) },
		"returned, no ret": func(s string) string { return strings.Replace(s, `"ret": "2"`, `"ret": null`, 1) },
		"raised, no exc":   func(s string) string { return strings.Replace(s, `"returned"`, `"raised"`, 1) },
		"bad kind":         func(s string) string { return strings.Replace(s, `"e": 2`, `"e": 5`, 1) },
		"line 0":           func(s string) string { return strings.Replace(s, `"l": 2`, `"l": 0`, 1) },
		"negative depth":   func(s string) string { return strings.Replace(s, `"d": 0`, `"d": -1`, 1) },
		"frame 0":          func(s string) string { return strings.Replace(s, `"f": 1`, `"f": 0`, 1) },
		"odd locals":       func(s string) string { return strings.Replace(s, `["x", "1"]`, `["x"]`, 1) },
		"line with value": func(s string) string {
			return strings.Replace(s, `"n": "f", "a": ["x", "1"]}, {"e": 3`, `"n": "f", "a": ["x", "1"], "r": "1"}, {"e": 3`, 1)
		},
		"return, no value": func(s string) string { return strings.Replace(s, `, "r": "2"}`, `}`, 1) },
		"bad base64":       func(s string) string { return strings.Replace(s, `"aGk="`, `"!!"`, 1) },
		"wrong type":       func(s string) string { return strings.Replace(s, `"id": 7`, `"id": "7"`, 1) },
		"wrong tag":        func(s string) string { return strings.Replace(s, `"t": "result"`, `"t": "hello"`, 1) },
		"empty local name": func(s string) string { return strings.Replace(s, `["x", "1"]`, `["", "1"]`, 1) },
		"empty func":       func(s string) string { return strings.Replace(s, `"n": "f"`, `"n": ""`, 1) },
		"not an object":    func(string) string { return `[]` },
		"empty":            func(string) string { return `` },
		"truncated":        func(s string) string { return s[:len(s)/2] },
		"negative exc line": func(s string) string {
			return strings.Replace(s, `"exc": null`, `"exc": {"type": "E", "msg": "", "line": -1}`, 1)
		},
	} {
		data := mutate(goodResult)
		require.NotEqual(t, goodResult, data, name)
		_, err := decodeResult([]byte(data))
		assert.Error(t, err, name)
	}
}

func TestDecodeHello(t *testing.T) {
	v, err := decodeHello([]byte(`{"t": "hello", "version": "3.11.7"}`))
	require.NoError(t, err)
	assert.Equal(t, "3.11.7", v)
	for _, bad := range []string{`{"t": "hello"}`, `{"t": "result", "version": "x"}`, `{"t": "hello", "version": "x", "pid": 1}`, `hello`} {
		_, err := decodeHello([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestResultStatusesMapToErrors(t *testing.T) {
	for status, kind := range map[string]error{
		"timeout": ErrTimeout, "memory": ErrMemory, "syntax": ErrSyntax, "setup": ErrSetup,
		"forbidden": ErrForbidden, "tracer": ErrTracer,
	} {
		data := strings.Replace(strings.Replace(goodResult, `"returned"`, `"`+status+`"`, 1), `"ret": "2"`, `"ret": null`, 1)
		w, err := decodeResult([]byte(data))
		require.NoError(t, err, status)
		_, err = w.result("v")
		assert.ErrorIs(t, err, kind, status)
	}
}

// FuzzDecodeResult: the decoder of the tracer's output never panics, and
// whatever it accepts converts to a Result or an *Error whose events are
// within the wire format's ranges.
func FuzzDecodeResult(f *testing.F) {
	f.Add([]byte(goodResult))
	f.Add([]byte(`{"t": "result", "id": 1, "status": "raised", "events": [], "ret": null, "exc": {"type": "E", "msg": "m", "line": 3}, "stdout": "", "stdout_trunc": false, "msg": "", "line": 0}`))
	f.Add([]byte(`{"t": "result", "id": 1, "status": "syntax", "events": [], "ret": null, "exc": null, "stdout": "", "stdout_trunc": false, "msg": "x", "line": 2}`))
	f.Add([]byte(`{"t": "hello", "version": "3"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeHello(data)
		w, err := decodeResult(data)
		if err != nil {
			return
		}
		res, err := w.result("v")
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			return
		}
		for _, ev := range res.Events {
			require.True(t, ev.Kind >= dsl.Call && ev.Kind <= dsl.Exception)
			require.GreaterOrEqual(t, ev.Line, 1)
			require.GreaterOrEqual(t, ev.Depth, 0)
			require.GreaterOrEqual(t, ev.Frame, 1)
		}
		if w.Status == "raised" {
			require.NotNil(t, res.Exception)
		}
	})
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("ab\n"+strings.Repeat("x", 100)+"\nlong"+strings.Repeat("y", 50)+"\ntail"), 16)
	l, err := readLine(br, 200)
	require.NoError(t, err)
	assert.Equal(t, "ab", string(l))
	l, err = readLine(br, 200)
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("x", 100), string(l))
	_, err = readLine(br, 20)
	assert.ErrorIs(t, err, ErrProtocol) // too long
	br = bufio.NewReaderSize(strings.NewReader("tail"), 16)
	_, err = readLine(br, 200)
	assert.ErrorIs(t, err, ErrProtocol) // no newline before EOF
	_, err = readLine(bufio.NewReader(strings.NewReader("")), 200)
	assert.ErrorIs(t, err, io.EOF)
}

func TestUnchangedLocalsAreShared(t *testing.T) {
	data := `{"t": "result", "id": 1, "status": "returned", "events": [` +
		`{"e": 1, "l": 1, "d": 0, "f": 1, "n": "f", "a": ["x", "'big'", "y", "1"]}, ` +
		`{"e": 1, "l": 1, "d": 1, "f": 2, "n": "f", "a": ["x", "'other'"]}, ` +
		`{"e": 2, "l": 2, "d": 0, "f": 1, "n": "f", "a": ["x", "", "y", "2"], "u": [0]}, ` +
		`{"e": 3, "l": 2, "d": 0, "f": 1, "n": "f", "a": ["x", "", "y", ""], "u": [0, 1], "r": "1"}], ` +
		`"ret": "1", "exc": null, "stdout": "", "stdout_trunc": false, "msg": "", "line": 0}`
	w, err := decodeResult([]byte(data))
	require.NoError(t, err)
	res, err := w.result("v")
	require.NoError(t, err)
	assert.Equal(t, []dsl.Local{{Name: "x", Repr: "'big'"}, {Name: "y", Repr: "2"}}, res.Events[2].Locals)
	assert.Equal(t, []dsl.Local{{Name: "x", Repr: "'big'"}, {Name: "y", Repr: "2"}}, res.Events[3].Locals)

	for name, bad := range map[string]string{
		"never sent":     strings.Replace(data, `"a": ["x", "'other'"]}`, `"a": ["z", ""], "u": [0]}`, 1),
		"out of range":   strings.Replace(data, `"u": [0]}`, `"u": [2]}`, 1),
		"out of order":   strings.Replace(data, `"u": [0, 1]`, `"u": [1, 0]`, 1),
		"repr not empty": strings.Replace(data, `"a": ["x", "", "y", "2"], "u": [0]`, `"a": ["x", "'big'", "y", "2"], "u": [0]`, 1),
	} {
		require.NotEqual(t, data, bad, name)
		w, err := decodeResult([]byte(bad)) // rejected here or, with history, in result
		if err == nil {
			_, err = w.result("v")
			assert.ErrorIs(t, err, ErrProtocol, name)
		}
		assert.Error(t, err, name)
	}
}

var parserSeeds = []string{
	goodResult,
	`{"t": "result", "id": -0, "status": "raised", "events": [{"e": 1, "l": 1, "d": 0, "f": 1, "n": "f", "a": [], "u": [], "r": "\ud83d\ude00\ud800x\u00e9\/\b\f\n\r\t\"\\"}], "ret": null, "exc": {"type": "E", "msg": "m", "line": 3}, "stdout": "", "stdout_trunc": true, "msg": "", "line": 0}`,
	` { "exc" : { } , "ret" : "\u0000" } `,
}

// FuzzParseResultMatchesJSON: the hand-written parser accepts only what
// encoding/json (strict) accepts, with the same values; on the tracer's own
// output both accept.
func FuzzParseResultMatchesJSON(f *testing.F) {
	for _, s := range parserSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, err := parseResult(data)
		if err != nil {
			return
		}
		var ref wireResult
		require.NoError(t, decodeStrict(data, &ref), "parseResult accepted what encoding/json rejects")
		require.Equal(t, ref, *fast)
	})
}

func TestParseResultAgreesOnTracerOutput(t *testing.T) {
	b := NewBatch(testLimits(t))
	defer b.Close()
	// Through the real tracer: escapes, astral characters, lone surrogates.
	res, err := b.Run(context.Background(), program(t, "def f(s):\n    t = s + '\\ud800'\n    return t\n", "f"), `f("\U0001f600 é \\ \" \n \x00")`)
	require.NoError(t, err)
	assert.Equal(t, `'😀 é \\ " \n \x00\ud800'`, res.Return)
	for _, seed := range parserSeeds {
		fast, err := parseResult([]byte(seed))
		require.NoError(t, err)
		var ref wireResult
		require.NoError(t, decodeStrict([]byte(seed), &ref))
		require.Equal(t, ref, *fast)
	}
}

func TestFindPythonResolvesShims(t *testing.T) {
	py, err := FindPython(context.Background())
	if err != nil {
		t.Skip(err)
	}
	assert.True(t, isELF(py), "%s is not an interpreter binary", py)
	assert.False(t, isELF("/etc/passwd"))
	assert.False(t, isELF("/nonexistent"))
}
