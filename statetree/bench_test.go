package statetree

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// dslTokens estimates the DSL tokens of text: each special token is one,
// other text about 3.5 bytes a token (a code BPE's rate).
func dslTokens(text string) float64 {
	special := strings.Count(text, "<|")
	rest := len(text) - special*14 // special tokens average about 14 bytes
	return float64(special) + float64(max(rest, 0))/3.5
}

// BenchmarkSampleEncode measures the policy plus the DSL encoder on the
// CRUXEval dev trees (tracing excluded): the data pipeline's share after
// trace.Run.
func BenchmarkSampleEncode(b *testing.B) {
	trees := realTrees(b, cruxPrograms(b))
	s, err := NewSampler(DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("crux", func(b *testing.B) { benchSampleEncode(b, s, trees) })
}

func benchSampleEncode(b *testing.B, s *Sampler, trees []*Tree) {
	rng := rand.New(rand.NewPCG(1, 1))
	var buf []byte
	var tokens, bytes float64
	for i := 0; i < b.N; i++ {
		x, err := s.Sample(trees[i%len(trees)], rng)
		if err != nil {
			b.Fatal(err)
		}
		buf, err = x.Trajectory.AppendEncode(buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		tokens += dslTokens(string(buf))
		bytes += float64(len(buf))
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(tokens/sec*60/1e6, "Mtok/min")
	b.ReportMetric(bytes/float64(b.N), "B/traj")
}

// BenchmarkSample is the policy alone.
func BenchmarkSample(b *testing.B) {
	tr := realTree(b, handPrograms[2])
	s, err := NewSampler(DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fib", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		for i := 0; i < b.N; i++ {
			if _, err := s.Sample(tr, rng); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTraceBuildSample is one pass of the data pipeline over the
// CRUXEval dev items in one goroutine: trace (one trace.Batch), Build, four
// sampled trajectories per program, Encode. Tracing dominates.
func BenchmarkTraceBuildSample(b *testing.B) {
	progs := cruxPrograms(b)
	s, err := NewSampler(DefaultParams())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	var tokens float64
	for i := 0; i < b.N; i++ {
		for _, tr := range realTrees(b, progs) {
			for j := 0; j < 4; j++ {
				x, err := s.Sample(tr, rng)
				if err != nil {
					b.Fatal(err)
				}
				text, err := x.Trajectory.Encode()
				if err != nil {
					b.Fatal(err)
				}
				tokens += dslTokens(text)
			}
		}
	}
	b.ReportMetric(tokens/b.Elapsed().Seconds()*60/1e6, "Mtok/min")
}
