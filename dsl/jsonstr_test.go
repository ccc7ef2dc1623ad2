package dsl

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSONStringMatchesPython compares appendJSONString with CPython's
// json.dumps on random and awkward strings, and reads each back.
func TestJSONStringMatchesPython(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	ss := []string{"", "..", "a", `"`, `\`, "\x00\x1f\x7f", "é", "😀", "\U0010ffff", "\u2028", "<|x|>"}
	for _, c := range awkwardRunes {
		ss = append(ss, string(c))
	}
	for range 3000 {
		ss = append(ss, randString(r, 40))
	}
	out := runPython(t, pyReadStrings+`
import json
print("\n".join(json.dumps(s) for s in read_strings()), end="")
`, packStrings(ss))
	want := strings.Split(string(out), "\n")
	require.Len(t, want, len(ss))
	for i, s := range ss {
		got, err := appendJSONString(nil, s)
		require.NoError(t, err)
		require.Equal(t, want[i], string(got), "string %q", s)
		back, next, perr := readJSONString(want[i], 0)
		require.Nil(t, perr, "string %q", s)
		require.Equal(t, len(want[i]), next)
		require.Equal(t, s, back)
	}
}

// TestLocalsMatchPython compares whole locals dicts with json.dumps(dict).
func TestLocalsMatchPython(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var flat []string
	var dicts []string
	for n := range 200 {
		k := n % 5
		var ls []Local
		seen := map[string]bool{}
		for len(ls) < k {
			name := randString(r, 6)
			if seen[name] {
				continue
			}
			seen[name] = true
			ls = append(ls, Local{name, randString(r, 20)})
		}
		e := encoder{}
		require.NoError(t, e.locals(ls, nil, false))
		dicts = append(dicts, string(e.buf))
		flat = append(flat, string(rune('0'+k)))
		for _, l := range ls {
			flat = append(flat, l.Name, l.Repr)
		}
	}
	out := runPython(t, pyReadStrings+`
import json
ss = read_strings()
res, i = [], 0
while i < len(ss):
    k = int(ss[i]); i += 1
    d = {}
    for _ in range(k):
        d[ss[i]] = ss[i+1]; i += 2
    res.append(json.dumps(d))
print("\n".join(res), end="")
`, packStrings(flat))
	require.Equal(t, strings.Join(dicts, "\n"), string(out))
}

func TestAppendJSONStringRejectsInvalidUTF8(t *testing.T) {
	_, err := appendJSONString(nil, "a\xffb")
	require.ErrorIs(t, err, errInvalidUTF8)
}

// TestReadJSONStringStrict checks that every non-canonical spelling of a
// string is refused, at the right offset.
func TestReadJSONStringStrict(t *testing.T) {
	for _, tc := range []struct {
		in  string
		off int
	}{
		{`"\/"`, 2},             // Python never escapes '/'
		{`"\u0041"`, 1},         // printable ASCII must be raw
		{`"\u000a"`, 1},         // \n has a short escape
		{`"\u00E9"`, 3},         // uppercase hex
		{"\"\xc3\xa9\"", 1},     // raw non-ASCII
		{"\"\x7f\"", 1},         // raw DEL
		{"\"\t\"", 1},           // raw control
		{`"\udc00"`, 1},         // lone low surrogate
		{`"\ud800"`, 7},         // lone high surrogate
		{`"\ud800\u0041"`, 7},   // high surrogate without a low one
		{`"abc`, 4},             // unterminated
		{`"\x"`, 2},             // unknown escape
		{`"a<|frame_sep|>"`, 2}, // special token inside
		{`abc`, 0},
	} {
		_, _, perr := readJSONString(tc.in, 0)
		if assert.NotNil(t, perr, "%q", tc.in) {
			assert.Equal(t, tc.off, perr.Offset, "%q: %v", tc.in, perr)
		}
	}
	v, next, perr := readJSONString(`"\ud83d\ude00<|x|>"!`, 0)
	require.Nil(t, perr)
	require.Equal(t, "😀<|x|>", v)
	require.Equal(t, 19, next)
}

// FuzzJSONString: reading never panics, and whatever reads writes back to
// the same bytes.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`""`, `"a\n\u00e9\ud83d\ude00"`, `"\u0041"`, `"..`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		v, next, perr := readJSONString(in, 0)
		if perr != nil {
			return
		}
		out, err := appendJSONString(nil, v)
		require.NoError(t, err)
		require.True(t, bytes.Equal(out, []byte(in[:next])), "%q -> %q -> %q", in[:next], v, out)
	})
}
