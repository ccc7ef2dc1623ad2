package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// naiveAttention is the textbook formula in float64: for query head h at
// position p, softmax over visible keys j of q·k_j/sqrt(d), times v_j.
func naiveAttention(q []float32, keys, vals [][]float32, a AttentionSpec) []float64 {
	hd, group := a.HeadDim, a.Heads/a.KVHeads
	out := make([]float64, a.N*a.Heads*hd)
	for t := 0; t < a.N; t++ {
		p := a.Pos0 + t
		for h := 0; h < a.Heads; h++ {
			g := h / group
			qh := q[(t*a.Heads+h)*hd : (t*a.Heads+h+1)*hd]
			var js []int
			var sc []float64
			m := math.Inf(-1)
			for j := 0; j <= p; j++ {
				if a.Window > 0 && j <= p-a.Window {
					continue
				}
				var d float64
				for i := 0; i < hd; i++ {
					d += float64(qh[i]) * float64(keys[j][g*hd+i])
				}
				d /= math.Sqrt(float64(hd))
				js, sc = append(js, j), append(sc, d)
				m = math.Max(m, d)
			}
			var z float64
			for i := range sc {
				sc[i] = math.Exp(sc[i] - m)
				z += sc[i]
			}
			o := out[(t*a.Heads+h)*hd:]
			for i, j := range js {
				for k := 0; k < hd; k++ {
					o[k] += sc[i] / z * float64(vals[j][g*hd+k])
				}
			}
		}
	}
	return out
}

// Attention over many cache blocks, with GQA and sliding windows, against
// the float64 formula; also through a forked cache after copy-on-write.
func TestAttentionAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const heads, kvHeads, hd, positions = 6, 2, 16, 150
	kvDim := kvHeads * hd
	c := newCache(2, kvDim)
	c.grow(positions - 10)
	c = c.Fork()
	c.grow(10)
	keys, vals := make([][]float32, positions), make([][]float32, positions)
	for p := 0; p < positions; p++ {
		for _, kv := range []int{0, 1} {
			row := c.row(1, kv, p)
			for i := range row {
				row[i] = float32(r.NormFloat64())
			}
		}
		keys[p], vals[p] = c.Key(1, p), c.Value(1, p)
	}
	be := NewCPUWith(kernels.Native(), 2)
	defer be.Close()
	for _, window := range []int{0, 1, 37, 1000} {
		for _, n := range []int{1, 40} {
			a := AttentionSpec{Layer: 1, N: n, Pos0: positions - n, Heads: heads, KVHeads: kvHeads, HeadDim: hd, Window: window}
			q := make([]float32, n*heads*hd)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			got := make([]float32, len(q))
			be.attention(got, q, a, c)
			want := naiveAttention(q, keys, vals, a)
			for i := range want {
				require.InDelta(t, want[i], got[i], 1e-4, "window %d n %d element %d", window, n, i)
			}
		}
	}
}
