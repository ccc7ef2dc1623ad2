package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ndbg/ndbg/kernels"
)

// BenchmarkAttentionDecode times the attention of one decode step (one query
// row) over every layer of a filled KV cache: the 34m shape (8 heads, no GQA)
// and a GQA shape (32 query heads on 8 KV heads of 128), 1 and 2 threads.
// Reports the rate at which the cache's keys and values are read.
func BenchmarkAttentionDecode(b *testing.B) {
	shapes := []struct {
		name                       string
		layers, heads, kvHeads, hd int
	}{
		{"34m", 8, 8, 8, 64},
		{"gqa4", 4, 32, 8, 128},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range shapes {
		for _, positions := range []int{128, 512} {
			kvDim := sh.kvHeads * sh.hd
			c := newCache(sh.layers, kvDim)
			c.grow(positions)
			for l := range sh.layers {
				for p := range positions {
					for kv := range 2 {
						row := c.row(l, kv, p)
						for i := range row {
							row[i] = float32(r.NormFloat64())
						}
					}
				}
			}
			q := make([]float32, sh.heads*sh.hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			dst := make([]float32, len(q))
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/pos=%d/threads=%d", sh.name, positions, threads), func(b *testing.B) {
					be := NewCPUWith(kernels.Native(), threads)
					defer be.Close()
					for b.Loop() {
						for l := range sh.layers {
							a := AttentionSpec{Layer: l, N: 1, Pos0: positions - 1, Heads: sh.heads, KVHeads: sh.kvHeads, HeadDim: sh.hd}
							be.attention(dst, q, a, func(int) (*Cache, int) { return c, positions - 1 })
						}
					}
					bytes := float64(b.N) * float64(sh.layers*positions*kvDim*2*4)
					b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}
