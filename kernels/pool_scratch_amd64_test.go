package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A product's packed x goes back to its pool, and the next product takes
// it rather than new memory (pages touched for the first time fault):
// after the first of three identical prefill-sized products the pool's
// stash stays as it is, and every product gives the result of a product
// without a pool. Both GEMMs: F32 weights (x packed in floats) and, where
// the CPU has AVX512_BF16, BF16 weights with BF16 activations (Fast: x
// packed in BF16 pairs).
func TestGEMMReusesPoolScratch(t *testing.T) {
	if Native().isa < isaAVX2 {
		t.Skip("no GEMM kernel: the noasm build, or a CPU without AVX2")
	}
	const n, rows, cols = 40, 48, 96 // two panels, the last one padded
	for _, c := range []struct {
		name    string
		impl    Impl
		dt      DType
		buffers int // the fewest buffers the stash keeps after a product
	}{
		{"f32", Native(), F32, 2},
		{"bf16-fast", Fast(), BF16, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.dt == BF16 && c.impl.Name() != "avx512bf16" {
				t.Skip("no AVX512_BF16 on this CPU")
			}
			r := rand.New(rand.NewPCG(5, 6))
			w := &Mat{Rows: rows, Cols: cols, DType: F32, F32: make([]float32, rows*cols)}
			x := make([]float32, n*cols)
			for i := range w.F32 {
				w.F32[i] = float32(r.NormFloat64())
			}
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			if c.dt == BF16 {
				f := w.F32
				w = &Mat{Rows: rows, Cols: cols, DType: BF16, BF16: make([]uint16, rows*cols)}
				F32ToBF16Slice(w.BF16, f)
			}
			want := make([]float32, n*rows)
			require.NoError(t, c.impl.MatMul(nil, want, x, n, w))
			p := NewPool(2)
			defer p.Close()
			kept, bytes := 0, int64(0)
			for round := range 3 {
				got := make([]float32, n*rows)
				require.NoError(t, c.impl.MatMul(p, got, x, n, w))
				require.Equal(t, want, got, "round %d", round)
				k, b := p.floats.Len(), p.floats.Bytes()
				if round == 0 {
					kept, bytes = k, b
					require.GreaterOrEqual(t, kept, c.buffers, "the packed x is not kept")
					require.GreaterOrEqual(t, bytes, int64(n*cols*c.dt.Size()))
					continue
				}
				require.Equal(t, kept, k, "round %d: new buffers were allocated", round)
				require.Equal(t, bytes, b, "round %d", round)
			}
		})
	}
}
