package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/kernels"
)

// bench34m runs fn as a sub-benchmark for each weight type (BF16, F32) and
// thread count (1, 2) on a 34m model with random weights and a context of
// ctxLen positions.
func bench34m(b *testing.B, ctxLen int, fn func(b *testing.B, m *Model)) {
	cfg, err := Preset("34m")
	if err != nil {
		b.Fatal(err)
	}
	for _, dt := range []kernels.DType{kernels.BF16, kernels.F32} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/threads=%d", dt, threads), func(b *testing.B) {
				m, err := NewRandom(context.Background(), cfg, dt, 1, Options{Threads: threads, Context: ctxLen})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				fn(b, m)
			})
		}
	}
}

// BenchmarkDecode times one decode step of one session (the 34m preset, BF16
// and F32, 1 and 2 threads) at 128 positions: the path `ndbg bench` and
// bench/llamacpp.sh compare with llama.cpp, here for profiling. Reports the
// mean rate and that of the fastest step (tok/s-best).
func BenchmarkDecode(b *testing.B) {
	ctx := context.Background()
	bench34m(b, 128+1<<14, func(b *testing.B, m *Model) {
		s := m.NewSession()
		if _, err := s.Forward(ctx, make([]int, 128), false); err != nil {
			b.Fatal(err)
		}
		fastest := time.Duration(1 << 62)
		for b.Loop() {
			if s.Len() == m.Config().MaxPositionEmbeddings {
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
		// The fastest step: stable when other processes share the cores,
		// where the mean swings twofold between runs.
		b.ReportMetric(1/fastest.Seconds(), "tok/s-best")
	})
}

// BenchmarkPrefill times the prefill of a 128-token prompt into a fresh
// session (the 34m preset, BF16 and F32, 1 and 2 threads), logits of the
// last row only: the prefill `ndbg bench` and bench/llamacpp.sh compare with
// llama.cpp, here for profiling. Reports the mean rate, that of the
// fastest prefill (tok/s-best) and tokens per CPU-second of all threads
// (tok/cpu-s): with other processes on the cores the wall-clock rates
// measure them too, while 2 threads' tok/cpu-s against 1 thread's is the
// parallel efficiency.
func BenchmarkPrefill(b *testing.B) {
	const prompt = 128
	ctx := context.Background()
	bench34m(b, 2*prompt, func(b *testing.B, m *Model) {
		tokens := make([]int, prompt)
		for i := range tokens {
			tokens[i] = (i*7919 + 3) % m.Config().VocabSize
		}
		s := m.NewSession()
		fastest := time.Duration(1 << 62)
		c0 := cputime.Process()
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
		if d := (cputime.Process() - c0).Seconds(); d > 0 {
			b.ReportMetric(float64(b.N*prompt)/d, "tok/cpu-s")
		}
	})
}
