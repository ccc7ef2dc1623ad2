package model

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/kernels"
)

// BenchmarkDecodeBatch times one DecodeBatch step of n sessions with
// random weights (BF16 unless named), each with a prompt of its own
// (distinct caches, as agents' sessions have; rolled back to the prompt
// when the context is full): the 34m preset, and 134m with F32 weights (the
// one preset whose 8 sessions gained less than 4× one session's tokens per
// CPU-second, bench/RESULTS.md), at 64 positions on one thread
// (weight-bound), and
// the embedded default model's shape (weights/default: hidden 256, 4
// layers, 8 heads of 32) at 1000 positions on 1 and 2 threads, where the
// sessions' KV caches read by attention (8 × 8 MB in F32, 8 × 4 MB in BF16)
// outweigh the 8.5 MB of weights. tokens/s is n per step. (`ndbg bench
// --sessions` measures the same through a Batcher, from concurrent
// goroutines.)
func BenchmarkDecodeBatch(b *testing.B) {
	m34, err := Preset("34m")
	if err != nil {
		b.Fatal(err)
	}
	m134, err := Preset("134m")
	if err != nil {
		b.Fatal(err)
	}
	small := Config{HiddenSize: 256, NumHiddenLayers: 4, NumAttentionHeads: 8, NumKeyValueHeads: 8, HeadDim: 32,
		IntermediateSize: 704, VocabSize: 4096, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 2048}
	for _, c := range []struct {
		name      string
		cfg       Config
		dtype     kernels.DType
		positions int
		threads   []int
		sessions  []int
	}{
		{"34m", m34, kernels.BF16, 64, []int{1}, []int{1, 4, 8}},
		{"134m-f32", m134, kernels.F32, 64, []int{1}, []int{1, 8}},
		{"default", small, kernels.BF16, 1000, []int{1, 2}, []int{1, 8}},
	} {
		for _, threads := range c.threads {
			benchDecodeBatch(b, c.name, c.cfg, c.dtype, c.positions, threads, c.sessions)
		}
	}
}

func benchDecodeBatch(b *testing.B, name string, cfg Config, dtype kernels.DType, positions, threads int, sizes []int) {
	ctx := context.Background()
	var m *Model
	var prompted []*Session // one per session of the largest batch
	defer func() {
		if m != nil {
			m.Close()
		}
	}()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("%s/pos=%d/threads=%d/sessions=%d", name, positions, threads, n), func(b *testing.B) {
			if m == nil { // built once per shape, only when a size runs
				var err error
				m, err = NewRandom(ctx, cfg, dtype, 1, Options{Threads: threads, Context: positions + 1<<14})
				if err != nil {
					b.Fatal(err)
				}
				for i := range slices.Max(sizes) {
					s := m.NewSession()
					prompt := make([]int, positions)
					for j := range prompt {
						prompt[j] = (j*7 + i*131) % cfg.VocabSize
					}
					if _, err := s.Forward(ctx, prompt, false); err != nil {
						b.Fatal(err)
					}
					prompted = append(prompted, s)
				}
			}
			sessions, tokens := make([]*Session, n), make([]int, n)
			for i := range sessions {
				sessions[i], tokens[i] = prompted[i].Fork(), i+1
			}
			c0 := cputime.Process()
			for b.Loop() {
				if sessions[0].Len() == cfg.MaxPositionEmbeddings {
					for _, s := range sessions {
						if err := s.Truncate(positions); err != nil {
							b.Fatal(err)
						}
					}
				}
				if _, err := DecodeBatch(ctx, sessions, tokens); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			if d := (cputime.Process() - c0).Seconds(); d > 0 {
				b.ReportMetric(float64(n*b.N)/d, "tok/cpu-s")
			}
		})
	}
}
