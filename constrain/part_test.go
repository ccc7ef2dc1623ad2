package constrain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

// TestPosition: fed a frame byte by byte, the matcher reports the part each
// byte starts in, read off the frame text independently: the event token,
// each local (from its opening quote to the comma or brace after its
// value), the line, the return value.
func TestPosition(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	line := p.src.Text(7) + "\n"
	from := dsl.State{Event: dsl.Line, Line: 6}
	type want struct {
		text string
		part Part
		loc  int
	}
	for _, c := range []struct {
		action dsl.Action
		parts  []want
	}{
		{dsl.Action{Kind: dsl.StepOver}, []want{{"<|line_sep|>", PartEvent, 0}, {"{", PartFrame, 0},
			{`"xs": "[1]", `, PartLocal, 0}, {`"total": "0"}`, PartLocal, 1}, {"<|action_sep|>" + line, PartLine, 0}, {"<|frame_sep|>", PartFrame, 0}}},
		{dsl.Action{Kind: dsl.StepReturn}, []want{{"<|return_sep|>", PartEvent, 0}, {"<|action_sep|>" + p.src.Text(9) + "\n", PartLine, 0},
			{`<|arg_sep|>"12"<|frame_sep|>`, PartValue, 0}}},
	} {
		m, err := p.Start(Context{Action: c.action, From: from, Stack: []int{4}})
		require.NoError(t, err)
		for _, w := range c.parts {
			for _, id := range tokenize(w.text, special) {
				pos := m.Position()
				require.Equal(t, w.part, pos.Part, "%s: %q", c.action, w.text)
				if w.part == PartLocal {
					require.Equal(t, w.loc, pos.Local, "%q", w.text)
				}
				require.True(t, m.Accept(id), "%q", w.text)
			}
		}
		require.True(t, m.Done())
	}
}

// TestFillCloseMask: inside a value the close mask holds exactly the
// allowed tokens that follow the shortest text that ends it (its repr's
// completion, then '"'); a value can grow to dsl.MaxRepr bytes and no
// further (InString, Len), where only closing is allowed; a value too deep
// to close within dsl.MaxRepr ends with the marker of a cut repr.
func TestFillCloseMask(t *testing.T) {
	v, special := byteVocab(t)
	p := compileSample(t, v)
	mask := make([]uint64, (v.Size()+63)/64)
	start := func() *Matcher {
		m, err := p.Start(Context{Action: dsl.Action{Kind: dsl.StepReturn}, From: dsl.State{Event: dsl.Line, Line: 6}, Stack: []int{4}})
		require.NoError(t, err)
		require.Equal(t, -1, feed(m, `<|return_sep|><|action_sep|>`+p.src.Text(9)+"\n"+`<|arg_sep|>"`, special))
		return m
	}
	closeMaskIs := func(m *Matcher, want byte) {
		t.Helper()
		require.True(t, m.FillCloseMask(mask))
		for id := range v.Size() {
			allowed := mask[id/64]&(1<<(id%64)) != 0
			require.Equal(t, id == int(want), allowed, "token %d (want %q)", id, want)
		}
	}
	m := start()
	closeMaskIs(m, '0') // an empty repr: the shortest is "0"
	require.Equal(t, -1, feed(m, "'"+strings.Repeat("R", dsl.MaxRepr-3), special))
	pos := m.Position()
	require.True(t, pos.InString && !pos.Closable && pos.Len == dsl.MaxRepr-2, "%+v", pos)
	require.Equal(t, 2, m.Finish())
	closeMaskIs(m, '\'')
	require.True(t, m.Accept('R'))
	require.False(t, m.Allowed('R'), "no room for the closing quote")
	require.True(t, m.Accept('\''))
	require.Equal(t, dsl.MaxRepr, m.Position().Len)
	require.True(t, m.Position().Closable)
	closeMaskIs(m, '"')
	require.False(t, m.Allowed('R'), "no byte past dsl.MaxRepr")

	m = start()
	require.Equal(t, -1, feed(m, `[1, (2, {\"a`, special))
	require.Equal(t, len(`\"})]"`), m.Finish())
	closeMaskIs(m, '\\')

	m = start()
	require.Equal(t, -1, feed(m, `\`, special)) // a JSON escape under way: it ends first
	require.Equal(t, len(`"\""`), m.Finish(), "the escape's '\"', which opens a string, closed")
	closeMaskIs(m, '"')
	require.Equal(t, -1, feed(m, `"\t`, special))
	require.Equal(t, len(`\""`), m.Finish())

	m = start()
	require.Equal(t, -1, feed(m, strings.Repeat("[", 16)+"'"+strings.Repeat("a", 223), special))
	require.Equal(t, len(`...[+1]"`), m.Finish(), "the repr cannot close within MaxRepr: it is cut")
	closeMaskIs(m, '.')
}
