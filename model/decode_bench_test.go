package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ndbg/ndbg/kernels"
)

// BenchmarkDecode times one decode step of one session (the 34m preset, BF16
// and F32, 1 and 2 threads) at 128 positions: the path `ndbg bench` and
// bench/llamacpp.sh compare with llama.cpp, here for profiling. Reports the
// mean rate and that of the fastest step (tok/s-best).
func BenchmarkDecode(b *testing.B) {
	cfg, err := Preset("34m")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, dt := range []kernels.DType{kernels.BF16, kernels.F32} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", dt, threads), func(b *testing.B) {
				m, err := NewRandom(ctx, cfg, dt, 1, Options{Threads: threads, Context: 128 + 1<<14})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				s := m.NewSession()
				if _, err := s.Forward(ctx, make([]int, 128), false); err != nil {
					b.Fatal(err)
				}
				fastest := time.Duration(1 << 62)
				for b.Loop() {
					if s.Len() == cfg.MaxPositionEmbeddings {
						if err := s.Truncate(128); err != nil {
							b.Fatal(err)
						}
					}
					t0 := time.Now()
					if _, err := s.Forward(ctx, []int{1}, false); err != nil {
						b.Fatal(err)
					}
					fastest = min(fastest, time.Since(t0))
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				// The fastest step: stable when other processes share the
				// cores, where the mean swings twofold between runs.
				b.ReportMetric(1/fastest.Seconds(), "tok/s-best")
			})
		}
	}
}

// BenchmarkPrefill times the prefill of a 128-token prompt into a fresh
// session (the 34m preset, BF16 and F32, 1 and 2 threads), logits of the
// last row only: the prefill `ndbg bench` and bench/llamacpp.sh compare with
// llama.cpp, here for profiling. Reports the mean rate and that of the
// fastest prefill (tok/s-best).
func BenchmarkPrefill(b *testing.B) {
	const prompt = 128
	cfg, err := Preset("34m")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	tokens := make([]int, prompt)
	for i := range tokens {
		tokens[i] = (i*7919 + 3) % cfg.VocabSize
	}
	for _, dt := range []kernels.DType{kernels.BF16, kernels.F32} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", dt, threads), func(b *testing.B) {
				m, err := NewRandom(ctx, cfg, dt, 1, Options{Threads: threads, Context: 2 * prompt})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				s := m.NewSession()
				fastest := time.Duration(1 << 62)
				for b.Loop() {
					if err := s.Truncate(0); err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					if _, err := s.Forward(ctx, tokens, false); err != nil {
						b.Fatal(err)
					}
					fastest = min(fastest, time.Since(t0))
				}
				b.ReportMetric(float64(b.N*prompt)/b.Elapsed().Seconds(), "tok/s")
				b.ReportMetric(prompt/fastest.Seconds(), "tok/s-best")
			})
		}
	}
}
