package dsl

import (
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
