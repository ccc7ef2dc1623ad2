package model

import (
	"context"
	"fmt"
	"testing"

	"github.com/ndbg/ndbg/kernels"
)

// BenchmarkDecodeBatch times one DecodeBatch step of n sessions of the 34m
// preset (BF16, one thread), each at 64 positions; tokens/s is n per step.
// (`ndbg bench --sessions` measures the same through a Batcher, from
// concurrent goroutines.)
func BenchmarkDecodeBatch(b *testing.B) {
	cfg, err := Preset("34m")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m, err := NewRandom(ctx, cfg, kernels.BF16, 1, Options{Threads: 1, Context: 64 + 1<<14})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	base := m.NewSession()
	if _, err := base.Forward(ctx, make([]int, 64), false); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 4, 8} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			sessions, tokens := make([]*Session, n), make([]int, n)
			for i := range sessions {
				sessions[i], tokens[i] = base.Fork(), i+1
			}
			for b.Loop() {
				if sessions[0].Len() == cfg.MaxPositionEmbeddings {
					for _, s := range sessions {
						if err := s.Truncate(64); err != nil {
							b.Fatal(err)
						}
					}
				}
				if _, err := DecodeBatch(ctx, sessions, tokens); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
