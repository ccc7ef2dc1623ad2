package model

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ndbg/ndbg/kernels"
)

// BenchmarkAttentionDecode times the attention of one decode step (one query
// row) over every layer of a filled KV cache: the 34m shape (8 heads, no GQA)
// and a GQA shape (32 query heads on 8 KV heads of 128), 1 and 2 threads,
// F32 and BF16 caches. Reports the rate at which the cache's keys and
// values are read (in bytes of the cache's dtype).
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
			for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
				benchAttentionDecode(b, r, sh.name, sh.layers, sh.heads, sh.kvHeads, sh.hd, positions, dt)
			}
		}
	}
}

func benchAttentionDecode(b *testing.B, r *rand.Rand, name string, layers, heads, kvHeads, hd, positions int, dt kernels.DType) {
	kvDim := kvHeads * hd
	c := newCache(layers, kvDim, hd, dt, nil)
	c.grow(positions)
	for l := range layers {
		fillCache(r, c, l, positions, 1)
	}
	q := make([]float32, heads*hd)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	dst := make([]float32, len(q))
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("%s/pos=%d/threads=%d/kv=%v", name, positions, threads, dt), func(b *testing.B) {
			be := NewCPUWith(kernels.Native(), threads)
			defer be.Close()
			for b.Loop() {
				for l := range layers {
					a := AttentionSpec{Layer: l, N: 1, Pos0: positions - 1, Heads: heads, KVHeads: kvHeads, HeadDim: hd}
					be.attention(dst, q, a, func(int) (*Cache, int) { return c, positions - 1 })
				}
			}
			bytes := float64(b.N) * float64(layers*positions*kvDim*2*dt.Size())
			b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
