package constrain

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

// FuzzMatcher feeds arbitrary token sequences under arbitrary contexts:
// the matcher never panics, rejects what it must, and every frame it
// completes parses with the DSL's strict parser (lenient only about ".."),
// names a line of the program, and agrees with its own mask.
func FuzzMatcher(f *testing.F) {
	v, special := byteVocab(f)
	p := compileSample(f, v)
	f.Add(uint8(1), uint8(6), []byte(`{"xs": "[1]", "k": ".."}`))
	f.Add(uint8(2), uint8(9), []byte("\x03\x00"))
	f.Add(uint8(4), uint8(8), []byte(`{"y": "2"}`))
	mask := make([]uint64, (v.Size()+63)/64)
	f.Fuzz(func(t *testing.T, action, fromLine uint8, raw []byte) {
		kind := dsl.ActionKind(action%uint8(dsl.InvContinue) + 1)
		a := dsl.Action{Kind: kind}
		line := int(fromLine)%len(p.src.Lines) + 1
		if kind == dsl.Breakpoint || kind == dsl.InvBreakpoint || kind == dsl.Continue {
			a.Lines = []int{line}
		}
		from := dsl.State{Event: dsl.Line, Line: line, Source: p.src.Text(line),
			Locals: []dsl.Local{{Name: "xs", Repr: "[1]"}, {Name: "k", Repr: "2"}}}
		traj := &dsl.Trajectory{Program: p.src, Start: dsl.State{Event: dsl.Call, Line: 4, Source: p.src.Text(4),
			Locals: []dsl.Local{{Name: "xs", Repr: "[1]"}, {Name: "k", Repr: "2"}}}}
		m, err := p.Start(Context{Action: a, From: from, Dots: dotsOf(traj)})
		require.NoError(t, err)
		// Bytes 0-7 of the input choose special tokens; the rest are bytes.
		var text strings.Builder
		names := []string{dsl.CallSep, dsl.LineSep, dsl.ReturnSep, dsl.ExceptionSep, dsl.ActionSep, dsl.ArgSep, dsl.FrameSep, dsl.EndOfText}
		for _, b := range raw {
			id, s := int(b), string([]byte{b})
			if b < 8 {
				id, s = special[names[b]], names[b]
			}
			m.FillMask(mask)
			inMask := mask[id>>6]>>(id&63)&1 == 1
			require.Equal(t, m.Allowed(id), inMask)
			if m.Accept(id) {
				text.WriteString(s)
			}
			if m.Done() {
				break
			}
		}
		if !m.Done() {
			return
		}
		st, err := traj.ParseFrameLenient(text.String())
		require.NoError(t, err, "completed frame %q", text.String())
		if st != nil {
			require.True(t, p.src.Nameable(st.Line))
		}
	})
}
