package kernels

import (
	"fmt"
	"math"
	"sync"
)

// Matrix products with quantized weights, as llama.cpp's CPU backend
// computes them: the activations x are quantized per block too, and each
// block's product is a sum of integer products scaled by the two blocks'
// scales. Which activation format goes with which weights is llama.cpp's
// (ggml's vec_dot_type):
//
//   - Q8_0, Q4_0 and Q5_0 weights take x as Q8_0: blocks of 32, the scale
//     d = max|x|/127 rounded to F16, quants round(x·127/max|x|) to nearest
//     even (llama.cpp's x86 quantize_row_q8_0);
//   - Q4_K and Q6_K take x as Q8_K: blocks of 256, d = max/-127 as float32
//     (max the element of largest magnitude), quants nearest_int(x/d) capped
//     at 127, and the sum of every 16 quants (quantize_row_q8_K_ref).
//
// The result differs from the product of the dequantized weights with the
// unrounded x by the rounding of x (NMSE about 1e-5 for typical rows: the
// conformance limit is QuantNMSE); between implementations only by float32
// rounding, since the integer sums are exact.

// qact is n rows of K activations quantized for one of the two activation
// formats: per row K quants, a scale per block and per-block sums. The
// rows are kept in tiles of qTile (the last tile has the rest, nx rows),
// each tile block-major: tile rows r0 … r0+nx-1 (r0 = qTile·t) of a block
// are consecutive, so that a kernel reads the blocks of all its rows from
// one advancing pointer. Q8_K (BL = 256, nb = K/256 blocks a row):
//
//	q[r0·K + (b·nx + i)·256 + j]  quant j of block b of row r0+i
//	d[r0·nb + b·nx + i]           its scale
//	bs[(r0·nb + b·nx + i)·16 + j] Σ of quants 16j … 16j+15 of the block
//
// Q8_0 keeps blocks of 32 in pairs (block b is half b%2 of pair p = b/2;
// np = ⌈nb/2⌉ pairs a row, an odd last block's pair half empty), so that a
// 64-byte vector holds two blocks of a row:
//
//	q[r0·np·64 + (p·nx + i)·64 + (b%2)·32 + j]
//	d[r0·np·2 + (p·nx + i)·2 + b%2]   its scale
//	s[r0·np·2 + (p·nx + i)·2 + b%2]   d·Σ quants of the block
//
// d and s have qactPad floats of padding past the end: the AVX-512 kernel
// reads a pair's two scales as a whole vector.
type qact struct {
	q []int8    // n·K quants
	d []float32 // per block (32 values for Q8_0, 256 for Q8_K): the scale
	// s: for Q8_0, per block of 32, the scale times the sum of the quants
	// (d·Σq, for the offsets of Q4_0 and Q5_0); for Q8_K, per 16 quants,
	// their sum (bsums).
	s  []float32
	bs []int16
	// s32: Q8_K only, with a packed Q4_K matrix: per block and row, the
	// sums of each 32 quants (bs[2j]+bs[2j+1], at most 32·128 in size) as
	// int16 pairs, sub-blocks 2p and 2p+1 in the low and high halves of
	// s32[(r0·nb + b·nx + i)·4 + p]: what VPDPWSSD multiplies by a pair of
	// the weights' mins.
	s32 []int32
	// o16: Q8_K only, with a packed Q6_K matrix: per block and row, -32
	// times the sum of each 16 quants (Q6_K's offset), o16[(r0·nb + b·nx +
	// i)·16 + j].
	o16 []int32
	// u: Q8_K only, with a Q6_K matrix packed for AVX2 (packQ6_KAVX2):
	// the quants plus 128 as unsigned bytes, laid out as q.
	u []uint8
}

// actQ8K reports whether weights of type dt take Q8_K activations (else Q8_0).
func actQ8K(dt DType) bool { return dt == Q4_K || dt == Q6_K }

// tileOf returns the first row of row i's tile, the tile's rows and i's
// place in it, for n rows.
func tileOf(i, n int) (r0, nx, ii int) {
	r0 = i / qTile * qTile
	return r0, min(qTile, n-r0), i - r0
}

// qactPad is the padding of a Q8_0 qact's d and s (see qact).
const qactPad = 16

// pairsOf returns the number of Q8_0 block pairs of a row of K values.
func pairsOf(K int) int { return (K/qk0 + 1) / 2 }

// quantizeActQ8_0 quantizes rows [lo, hi) of the n rows of x (rows of K,
// K a multiple of 32) into a: with the assembly row quantizer when fast
// and the CPU has one (the same bytes), else in Go.
func quantizeActQ8_0(a *qact, x []float32, n, K, lo, hi int, fast bool) {
	nb, np := K/qk0, pairsOf(K)
	for i := lo; i < hi; i++ {
		r0, nx, ii := tileOf(i, n)
		if fast && quantRowQ8_0(x[i*K:(i+1)*K], a.q[r0*np*64+ii*64:], nx*64, a.d[r0*np*2+ii*2:], a.s[r0*np*2+ii*2:], nx*2*4) {
			continue
		}
		for b := range nb {
			xs := x[i*K+b*qk0 : i*K+b*qk0+qk0]
			o := r0*np*64 + (b/2*nx+ii)*64 + b%2*qk0
			e := r0*np*2 + (b/2*nx+ii)*2 + b%2
			var amax float32
			for _, v := range xs {
				amax = max(amax, abs32(v))
			}
			q := a.q[o : o+qk0]
			if amax > math.MaxFloat32 || amax != amax {
				// A NaN or Inf: the block's scale is NaN, and so is
				// every product with it.
				clear(q)
				a.d[e], a.s[e] = float32(math.NaN()), float32(math.NaN())
				continue
			}
			d := amax / 127
			var id float32
			if amax != 0 {
				id = 127 / amax
			}
			dh := F16ToF32(F32ToF16(d))
			sum := int32(0)
			for j, v := range xs {
				// |v·id| ≤ 127: nearestInt rounds to nearest even, as
				// the x86 quantize_row_q8_0's _mm256_round_ps does.
				r := nearestInt(float32(v * id))
				q[j] = int8(r)
				sum += r
			}
			a.d[e] = dh
			a.s[e] = dh * float32(sum)
		}
	}
}

// quantizeActQ8K quantizes rows [lo, hi) of the n rows of x (rows of K,
// K a multiple of 256) into a: with the assembly row quantizer when fast
// and the CPU has one (the same bytes), else in Go.
func quantizeActQ8K(a *qact, x []float32, n, K, lo, hi int, fast bool) {
	nb := K / qkK
	for i := lo; i < hi; i++ {
		r0, nx, ii := tileOf(i, n)
		if fast && quantRowQ8K(x[i*K:(i+1)*K], a.q[r0*K+ii*qkK:], nx*qkK, a.d[r0*nb+ii:], nx*4, a.bs[(r0*nb+ii)*16:], nx*32) {
			continue
		}
		for b := range nb {
			xs := x[i*K+b*qkK : i*K+b*qkK+qkK]
			o := r0*K + (b*nx+ii)*qkK
			e := r0*nb + b*nx + ii
			q := a.q[o : o+qkK]
			mx, amax := absMax(xs)
			bs := a.bs[e*16 : e*16+16]
			if !finite(xs) {
				amax = float32(math.NaN())
			}
			if amax == 0 || amax > math.MaxFloat32 || amax != amax {
				// Zero: all quants 0. NaN or Inf: a NaN scale, so that
				// every product with the block is NaN.
				clear(q)
				clear(bs)
				a.d[e] = 0
				if amax != 0 {
					a.d[e] = float32(math.NaN())
				}
				continue
			}
			iscale := -127 / mx
			for j, v := range xs {
				q[j] = int8(min(127, nearestInt(float32(iscale*v))))
			}
			for j := range 16 {
				s := int16(0)
				for _, v := range q[16*j : 16*j+16] {
					s += int16(v)
				}
				bs[j] = s
			}
			a.d[e] = 1 / iscale
		}
	}
}

// finite reports whether x holds no NaN or Inf.
func finite(x []float32) bool {
	var s float32
	for _, v := range x {
		s += v - v // 0, or NaN for a NaN or an Inf
	}
	return s == 0
}

// QuantNMSE is the NMSE bound of a matrix product with quantized weights
// against the float64 product of the dequantized weights with x as given:
// the rounding of x to 8 bits per value (Q8_0 or Q8_K) costs about 1e-5 on
// random rows; the bound leaves a margin.
const QuantNMSE = 1e-4

// quantSerialBytes is the weight traffic below which a quantized product
// runs on the calling goroutine alone.
const quantSerialBytes = 64 << 10

// matMulQuant computes dst = x · Wᵀ for quantized W (or W of quantized
// parts): x is quantized once per activation format the weights need, then
// chunks of weight rows (each within one part; about 64 KiB for decode) are
// spread over p, for decode in one contiguous share per thread; a chunk's
// rows are multiplied with up to qTile rows of x at a time, so that each
// weight block is unpacked once for those rows.
func (b Impl) matMulQuant(p *Pool, dst, x []float32, n int, w *Mat) {
	K, R := w.Cols, w.Rows
	parts := w.Parts
	if parts == nil {
		parts = []*Mat{w}
	}
	sc := quantScratch.Get().(*quantBufs)
	defer quantScratch.Put(sc)
	var a0, aK *qact
	for _, pt := range parts {
		if actQ8K(pt.DType) && aK == nil {
			aK = sc.act(&sc.k, n, K, true)
			aK.s32, aK.o16, aK.u = aK.s32[:0], aK.o16[:0], aK.u[:0]
		}
		if pt.pk != nil && pt.DType == Q4_K {
			aK.s32 = sized(aK.s32, n*K/64)
		}
		if pt.pk != nil && pt.DType == Q6_K {
			if !packsForAVX2() {
				aK.o16 = sized(aK.o16, n*K/16)
			} else if b.readsQ6_KPackedAVX2(n) {
				aK.u = sized(aK.u, n*K)
			}
		}
		if !actQ8K(pt.DType) && a0 == nil {
			a0 = sc.act(&sc.zero, n, K, false)
		}
	}
	quant := func(lo, hi int) {
		if a0 != nil {
			quantizeActQ8_0(a0, x, n, K, lo, hi, b.isa != isaGeneric)
		}
		if aK != nil {
			quantizeActQ8K(aK, x, n, K, lo, hi, b.isa != isaGeneric)
			packedSums(aK, n, K, lo, hi)
		}
	}
	if n*K >= 1<<15 {
		p.For(n, max(1, (1<<14)/K), quant)
	} else {
		quant(0, n)
	}
	tasks := sc.tasks[:0]
	r0 := 0
	for _, pt := range parts {
		rb := pt.DType.RowBytes(K)
		grain := max(4, (65536/max(1, rb)+3)&^3)
		if n > 1 {
			// Prefill: a chunk is read n/qTile times, from L2.
			grain = max(4, (256<<10)/max(1, rb)/max(1, min(n, 16))&^3)
		}
		if pt.pk != nil { // whole groups of 16 for the packed kernel
			grain = max(16, grain&^15)
		}
		for lo := 0; lo < pt.Rows; lo += grain {
			tasks = append(tasks, quantTask{pt, r0, lo, min(pt.Rows, lo+grain)})
		}
		r0 += pt.Rows
	}
	sc.tasks = tasks
	if int64(n)*w.Bytes() < quantSerialBytes {
		p = nil
	}
	run := func(lo, hi int) {
		for _, t := range tasks[lo:hi] {
			a := a0
			if actQ8K(t.pt.DType) {
				a = aK
			}
			rb := t.pt.DType.RowBytes(K)
			step := qTile
			if t.pt.pk != nil {
				step = packedTile
			}
			for i := 0; i < n; i += step {
				nx := min(step, n-i)
				lo := t.lo
				if t.pt.pk != nil {
					lo = b.qdotPacked(t.pt, dst[i*R+t.r0+t.lo:], R, t.lo, t.hi, a, K, i, nx)
				}
				for j := i; lo < t.hi && j < i+nx; j += qTile { // the rest on the row kernels
					b.qdot(t.pt.DType, dst[j*R+t.r0+lo:], R, t.pt.Q[lo*rb:t.hi*rb], rb, t.hi-lo, a, K, j, min(qTile, i+nx-j))
				}
			}
		}
	}
	if n == 1 {
		// Decode reads every weight once. Each thread takes a contiguous
		// share of the chunks (ForShares), so that its reads are one long
		// stream the hardware prefetchers follow; chunks handed out in
		// turn (For) break both threads' streams every 64 KiB. Decode
		// tokens/s at 2 threads (BenchmarkDecodeGGUF, 2-core AMD EPYC
		// Zen 5, medians of 3-5 alternating runs): 1.8b Q4_K_M 24.6 →
		// 33.8, 134m Q4_K_M 301 → 339, 134m Q8_0 200 → 229.
		p.ForShares(len(tasks), func(_, lo, hi int) { run(lo, hi) })
	} else {
		p.For(len(tasks), 1, run)
	}
}

// readsQ6_KPackedAVX2 reports whether b's products with nx rows of x read
// a Q6_K matrix's AVX2 layout (packQ6_KAVX2, with x + 128 in qact.u): on
// the AVX2 level where Pack lays Q6_K out for it, and not for one row of x
// (decode), which the row kernel reads from the fewer bytes of the blocks.
func (b Impl) readsQ6_KPackedAVX2(nx int) bool { return b.isa == isaAVX2 && packsForAVX2() && nx > 1 }

// packedSums fills a.s32, a.o16 and a.u (see qact), where sized, for rows
// [lo, hi) of n: the activations' sums and unsigned quants the packed
// Q4_K and Q6_K kernels take.
func packedSums(a *qact, n, K, lo, hi int) {
	nb := K / qkK
	for i := lo; i < hi; i++ {
		r0, nx, ii := tileOf(i, n)
		for b := range nb {
			e := r0*nb + b*nx + ii
			if len(a.u) > 0 {
				o := r0*K + (b*nx+ii)*qkK
				for j, v := range a.q[o : o+qkK] {
					a.u[o+j] = uint8(v) ^ 0x80
				}
			}
			bs := a.bs[e*16 : e*16+16]
			if len(a.s32) > 0 {
				s := a.s32[e*4 : e*4+4]
				for p := range s {
					lo := int32(bs[4*p]) + int32(bs[4*p+1])
					hi := int32(bs[4*p+2]) + int32(bs[4*p+3])
					s[p] = int32(uint32(uint16(lo)) | uint32(uint16(hi))<<16)
				}
			}
			if len(a.o16) > 0 {
				o := a.o16[e*16 : e*16+16]
				for j := range o {
					o[j] = -32 * int32(bs[j])
				}
			}
		}
	}
}

// quantBufs is the scratch of one matMulQuant call: the quantized
// activations of both formats, kept between calls (quantScratch) so that a
// decode step allocates nothing.
type quantBufs struct {
	zero, k qact
	tasks   []quantTask
}

// quantTask is a chunk of weight rows: rows [lo, hi) of part pt, whose
// first row is row r0 of the matrix.
type quantTask struct {
	pt     *Mat
	r0     int
	lo, hi int
}

var quantScratch = sync.Pool{New: func() any { return new(quantBufs) }}

// act returns a sized for n rows of K activations of the Q8_K (k) or Q8_0
// format, growing its slices as needed.
func (b *quantBufs) act(a *qact, n, K int, k bool) *qact {
	if k {
		a.q = sized(a.q, n*K)
		a.d = sized(a.d, n*K/qkK)
		a.bs = sized(a.bs, n*K/16)
	} else {
		np := pairsOf(K)
		a.q = sized(a.q, n*np*64)
		clear(a.q) // an odd last block's empty pair half stays zero
		a.d = sized(a.d, n*np*2+qactPad)
		a.s = sized(a.s, n*np*2+qactPad)
	}
	return a
}

// sized returns s with length n: s's own memory when it has the capacity
// (the contents stale), else new memory.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// qTile is the most rows of x a row kernel call multiplies with each
// weight row it unpacks: the rows of x of a tile of qact.
const qTile = 4

// packedTile is the most rows of x a call of a kernel on packed weights
// (Pack) multiplies with each block it unpacks: two tiles. Eight batched
// sessions then read the weights once a step, not twice (134m Q4_K_M, 8
// sessions, 1 thread: see bench/RESULTS.md).
const packedTile = 2 * qTile

// qdotGo sets d[i*ldd+j] = W[j]·x[i0+i] for j < rows, i < nx: weight row j
// is w[j*rb:(j+1)*rb] of type dt, x rows i0 … i0+nx-1 the tile of a's
// quantized activations (rows of K values) that starts at row i0.
func qdotGo(dt DType, d []float32, ldd int, w []byte, rb, rows int, a *qact, K, i0, nx int) {
	for j := range rows {
		wr := w[j*rb : (j+1)*rb]
		for i := range nx {
			t := xtile{a: a, K: K, r0: i0, nx: nx, i: i}
			var v float32
			switch dt {
			case Q8_0:
				v = dotQ8_0Go(wr, t)
			case Q4_0:
				v = dotQ4_0Go(wr, t)
			case Q5_0:
				v = dotQ5_0Go(wr, t)
			case Q4_K:
				v = dotQ4KGo(wr, t)
			case Q6_K:
				v = dotQ6KGo(wr, t)
			}
			d[i*ldd+j] = v
		}
	}
}

// xtile addresses row r0+i of a tile of nx rows of quantized activations.
type xtile struct {
	a            *qact
	K, r0, nx, i int
}

// block returns the quants of block b (of bl values: 32, Q8_0's pair
// layout, or 256, Q8_K's) and its index among the scales (for Q8_K also
// the index of its first 16-quant sum, ·16).
func (t xtile) block(b, bl int) (q []int8, e int) {
	if bl == qk0 {
		np := pairsOf(t.K)
		o := t.r0*np*64 + (b/2*t.nx+t.i)*64 + b%2*qk0
		return t.a.q[o : o+qk0], t.r0*np*2 + (b/2*t.nx+t.i)*2 + b%2
	}
	o := t.r0*t.K + (b*t.nx+t.i)*bl
	return t.a.q[o : o+bl], t.r0*(t.K/bl) + b*t.nx + t.i
}

// dotQ8_0Go is Σ_b d_w·d_x·Σ q_w·q_x over the blocks of a Q8_0 row and
// activation row xi.
func dotQ8_0Go(w []byte, t xtile) float32 {
	var sum float32
	for b := range t.K / qk0 {
		blk := w[b*bytesQ8_0 : (b+1)*bytesQ8_0]
		xq, e := t.block(b, qk0)
		var s int32
		for j, q := range blk[2:34] {
			s += int32(int8(q)) * int32(xq[j])
		}
		sum += F16ToF32(le16(blk)) * t.a.d[e] * float32(s)
	}
	return sum
}

// dotQ4_0Go is Σ_b d_w·d_x·Σ (q_w − 8)·q_x, computed as
// d_w·(d_x·Σ q_w·q_x − 8·d_x·Σ q_x) as the assembly does.
func dotQ4_0Go(w []byte, t xtile) float32 {
	var sum float32
	for b := range t.K / qk0 {
		blk := w[b*bytesQ4_0 : (b+1)*bytesQ4_0]
		xq, e := t.block(b, qk0)
		var s int32
		for j, q := range blk[2:18] {
			s += int32(q&15)*int32(xq[j]) + int32(q>>4)*int32(xq[j+16])
		}
		sum += F16ToF32(le16(blk)) * (t.a.d[e]*float32(s) - 8*t.a.s[e])
	}
	return sum
}

// dotQ5_0Go is dotQ4_0Go for 5-bit quants (offset 16).
func dotQ5_0Go(w []byte, t xtile) float32 {
	var sum float32
	for b := range t.K / qk0 {
		blk := w[b*bytesQ5_0 : (b+1)*bytesQ5_0]
		xq, e := t.block(b, qk0)
		qh := le32(blk[2:])
		var s int32
		for j, q := range blk[6:22] {
			q0 := int32(q&15) | int32(qh>>j&1)<<4
			q1 := int32(q>>4) | int32(qh>>(j+16)&1)<<4
			s += q0*int32(xq[j]) + q1*int32(xq[j+16])
		}
		sum += F16ToF32(le16(blk)) * (t.a.d[e]*float32(s) - 16*t.a.s[e])
	}
	return sum
}

// dotQ4KGo is, per super-block, d_x·d·Σ_j sc_j·Σ q·q_x − d_x·dmin·Σ_j m_j·Σ q_x
// over a Q4_K row and a Q8_K activation row.
func dotQ4KGo(w []byte, t xtile) float32 {
	var sum float32
	for b := range t.K / qkK {
		blk := w[b*bytesQ4_K : (b+1)*bytesQ4_K]
		xq, e := t.block(b, qkK)
		bs := t.a.bs[e*16 : e*16+16]
		sc, qs := blk[4:16], blk[16:144]
		var isum, msum int32
		for c := range 4 {
			s0, m0 := scaleMinK4(2*c, sc)
			s1, m1 := scaleMinK4(2*c+1, sc)
			var lo, hi int32
			for l, q := range qs[32*c : 32*c+32] {
				lo += int32(q&15) * int32(xq[64*c+l])
				hi += int32(q>>4) * int32(xq[64*c+32+l])
			}
			isum += int32(s0)*lo + int32(s1)*hi
			msum += int32(m0)*int32(bs[4*c]+bs[4*c+1]) + int32(m1)*int32(bs[4*c+2]+bs[4*c+3])
		}
		dx := t.a.d[e]
		sum += dx*F16ToF32(le16(blk))*float32(isum) - dx*F16ToF32(le16(blk[2:]))*float32(msum)
	}
	return sum
}

// dotQ6KGo is, per super-block, d_x·d·Σ_j sc_j·Σ (q − 32)·q_x over a Q6_K
// row and a Q8_K activation row.
func dotQ6KGo(w []byte, t xtile) float32 {
	var sum float32
	for b := range t.K / qkK {
		blk := w[b*bytesQ6_K : (b+1)*bytesQ6_K]
		xq, e := t.block(b, qkK)
		bs := t.a.bs[e*16 : e*16+16]
		var q [qkK]uint8
		q6Values(blk, &q)
		var sub [16]int32 // Σ q·q_x per 16 values
		for v, qv := range q {
			sub[v/16] += int32(qv) * int32(xq[v])
		}
		sc := blk[192:208]
		var isum int32
		for j := range 16 {
			isum += int32(int8(sc[j])) * (sub[j] - 32*int32(bs[j]))
		}
		sum += t.a.d[e] * F16ToF32(le16(blk[208:])) * float32(isum)
	}
	return sum
}

// RoundActivations sets dst to x as a product with weights of type dt
// (quantized) rounds it: x quantized per block to Q8_0 or Q8_K (see the
// top of this file) and dequantized. A float64 product of the dequantized
// weights with dst is what such a MatMul computes up to float32 rounding
// (the reference of the conformance suite). len(x) must be a multiple of
// dt.BlockLen() and dst as long.
func RoundActivations(dt DType, dst, x []float32) error {
	if !dt.Quantized() || len(x)%dt.BlockLen() != 0 || len(dst) != len(x) {
		return fmt.Errorf("%w: %d activations for %v weights into %d", ErrShape, len(x), dt, len(dst))
	}
	K := len(x)
	if actQ8K(dt) {
		a := &qact{q: make([]int8, K), d: make([]float32, K/qkK), bs: make([]int16, K/16)}
		quantizeActQ8K(a, x, 1, K, 0, 1, false)
		for i, q := range a.q {
			dst[i] = a.d[i/qkK] * float32(q)
		}
		return nil
	}
	np := pairsOf(K)
	a := &qact{q: make([]int8, np*64), d: make([]float32, np*2+qactPad), s: make([]float32, np*2+qactPad)}
	quantizeActQ8_0(a, x, 1, K, 0, 1, false)
	for i := range dst {
		dst[i] = a.d[i/qk0] * float32(a.q[i]) // one row: block b at b·32, its scale at b
	}
	return nil
}
