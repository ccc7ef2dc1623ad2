package dsl

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchTrajectory is a long trajectory: 200 steps over a random program,
// locals repeating so ".." is common; plain: typical ASCII reprs, else
// awkward Unicode ones that need escaping.
func benchTrajectory(b *testing.B, plain bool) (*Trajectory, string) {
	r := rand.New(rand.NewPCG(11, 12))
	g := newGen(r, randProgram(r))
	g.plain = plain
	tr := &Trajectory{Program: g.p, Start: *g.state(true)}
	for range 200 {
		tr.Steps = append(tr.Steps, Step{Action: g.action(), State: g.state(false)})
	}
	text, err := tr.Encode()
	require.NoError(b, err)
	return tr, text
}

// BenchmarkEncode measures Encode into a reused buffer; MB/s is of text.
func BenchmarkEncode(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchEncode(b, true) })
	b.Run("unicode", func(b *testing.B) { benchEncode(b, false) })
}

func benchEncode(b *testing.B, plain bool) {
	tr, text := benchTrajectory(b, plain)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	buf := make([]byte, 0, 2*len(text))
	for b.Loop() {
		var err error
		buf, err = tr.AppendEncode(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse measures Parse of the same texts.
func BenchmarkParse(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchParse(b, true) })
	b.Run("unicode", func(b *testing.B) { benchParse(b, false) })
}

func benchParse(b *testing.B, plain bool) {
	_, text := benchTrajectory(b, plain)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStep measures what a session does per step after a history of
// n steps: check and write the next action, look up the ".." references,
// read the frame a model wrote and append the step. incremental: with an
// Encoder (its cost should not grow with n); whole: with the
// whole-trajectory functions (EncodePrompt, References, ParseFrameLenient),
// which replay the history.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		r := rand.New(rand.NewPCG(21, 22))
		g := newGen(r, randProgram(r))
		g.plain = true
		tr := &Trajectory{Program: g.p, Start: *g.state(true)}
		for range n {
			tr.Steps = append(tr.Steps, Step{Action: g.action(), State: g.state(false)})
		}
		next := Step{Action: g.action(), State: g.state(false)}
		enc, err := tr.NewEncoder()
		require.NoError(b, err)
		text, err := enc.Fork().Append(next)
		require.NoError(b, err)
		act, err := enc.Action(next.Action)
		require.NoError(b, err)
		frame := text[len(act):]
		b.Run(fmt.Sprintf("incremental/history=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f := enc.Fork()
				_, err := f.Action(next.Action)
				_ = f.References()
				_, err2 := f.ParseFrameLenient(frame)
				_, err3 := f.Append(next)
				if err != nil || err2 != nil || err3 != nil {
					b.Fatal(err, err2, err3)
				}
			}
		})
		b.Run(fmt.Sprintf("whole/history=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, err := tr.EncodePrompt(next.Action)
				_ = tr.References()
				_, err2 := tr.ParseFrameLenient(frame)
				if err != nil || err2 != nil {
					b.Fatal(err, err2)
				}
			}
		})
	}
}
