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
		c.keysToColumns(l, 0, positions) // as attention finds full blocks
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

// BenchmarkAttentionBatch times the attention of one batched decode step
// of 8 rows over every layer, the 34m shape with a BF16 cache on one
// thread: 8 forks of one prompt (its blocks shared, each fork's last block
// its own) and 8 separate caches of the same length. Reports query rows
// per second.
func BenchmarkAttentionBatch(b *testing.B) {
	const layers, heads, hd, rows = 8, 8, 64, 8
	r := rand.New(rand.NewPCG(3, 4))
	for _, prompt := range []int{128, 512} {
		for _, forks := range []bool{true, false} {
			caches := make([]*Cache, rows)
			base := newCache(layers, heads*hd, hd, kernels.BF16, nil)
			base.grow(prompt)
			for l := range layers {
				fillCache(r, base, l, prompt, 1)
				base.keysToColumns(l, 0, prompt) // as attention finds full blocks
			}
			for i := range caches {
				if forks {
					caches[i] = base.Fork()
				} else {
					caches[i] = newCache(layers, heads*hd, hd, kernels.BF16, nil)
					caches[i].grow(prompt)
					for l := range layers {
						fillCache(r, caches[i], l, prompt, 1)
						caches[i].keysToColumns(l, 0, prompt)
					}
				}
				caches[i].grow(1)
				for l := range layers {
					row := make([]float32, heads*hd)
					caches[i].setRow(l, 0, prompt, row)
					caches[i].setRow(l, 1, prompt, row)
				}
			}
			q := make([]float32, rows*heads*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			dst := make([]float32, len(q))
			b.Run(fmt.Sprintf("pos=%d/forks=%v", prompt, forks), func(b *testing.B) {
				be := NewCPUWith(kernels.Native(), 1)
				defer be.Close()
				for b.Loop() {
					for l := range layers {
						a := AttentionSpec{Layer: l, N: rows, Heads: heads, KVHeads: heads, HeadDim: hd}
						be.decodeAttention(dst, q, a, func(t int) (*Cache, int) { return caches[t], prompt })
					}
				}
				b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}
