//go:build !noasm && amd64

package kernels

import (
	"math/bits"
	"unsafe"
)

// gemvMaxN is the largest n computed as matrix-vector products rather than
// one blocked product (which pads n up to a whole panel of rows), where
// gemvBatch does not take it.
const gemvMaxN = 3

// useGemvBatch reports whether gemvBatch computes this product (one read
// of W for all n rows of x): n = 2…4 with AVX-512 (the four-vector
// kernel), and n = 5…8 with AVX-512 through the AVX-512 Rows3 kernels
// while x fits L1 (BF16 up to 64 KiB as below, F32 up to 56 KiB): on Zen 5
// (BenchmarkGemvBatchPaths, n = 8, medians) they take 0.55-0.72× the AVX2
// Rows3 kernels' time for BF16 and 0.66-0.91× for F32, and F32 against
// the blocked product, which took n = 5…8 before, 0.25-0.71× (768×2048 at
// n = 7, x 56 KiB: 0.59×; at n = 8, x 64 KiB, 1.13×, so the blocked
// product keeps it); n = 2…8 with AVX2, where the blocked
// product's half panel of 8 rows is bound by weight broadcasts, as long as
// x is small enough. The AVX2 kernels read x from L1 or L2, once per FMA
// (F32 at n ≥ 4: once per three, three weight rows at a time): measured on
// Zen 3 (BenchmarkMatMulBatch, BenchmarkGemvBatchPaths), they lose to the
// previous paths once x outgrows about 48 KiB (BF16 at n = 2, 3, and F32
// at n ≥ 4 with rows up to 8 KiB: 768×2048 at n = 7, x 56 KiB, 1.08× the
// GEMM's time, at n = 6 0.94×, 512×1376 at n = 8 0.77×, against the GEMM of
// neighbouring weight groups; against gemmStreams 1.07× at 768×2048 n = 6,
// 0.75× at n = 4, 0.89× at 512×1376 n = 8) or 28 KiB (F32 at n = 2, 3), and
// for those F32 rows over 6 KiB, where repeated one-row GEMVs, four weight
// streams each, read W faster. BF16 at n ≥ 4 (three weight rows, each
// widened once per pass of x rows) takes x up to 64 KiB: 768×2048 at n = 7
// / 8, x 56 / 64 KiB, 0.79-0.89× / 0.79-1.07× (a tie) the stream GEMM's
// median time (larger x not measured).
func (b Impl) useGemvBatch(n int, w *Mat) bool {
	switch {
	case n < 2:
		return false
	case b.isa >= isaAVX512 && n <= 4:
		return true
	case n > 8:
		return false
	case b.isa >= isaAVX512 && w.DType != BF16:
		return n*w.Cols*4 <= 56<<10
	case w.DType == BF16 && n >= gemvRows3MinN:
		return n*w.Cols*4 <= 64<<10
	case w.DType == BF16:
		return n*w.Cols*4 <= 48<<10
	case n >= gemvRows3MinN:
		return n*w.Cols*4 <= 48<<10 && w.Cols*4 <= 8<<10
	default:
		return n*w.Cols*4 <= 28<<10 && w.Cols*4 <= 6<<10
	}
}

// gemvSerialBytes is the weight traffic below which a matrix-vector product
// runs on the calling goroutine alone.
const gemvSerialBytes = 128 << 10

// gemmPanelBytes is the size of one K block of all x panels, meant to stay in
// L2 while the weight groups stream past.
const gemmPanelBytes = 256 << 10

func (b Impl) matMul(p *Pool, dst, x []float32, n int, w *Mat) {
	switch {
	case b.isa == isaGeneric:
		matMulGeneric(p, dst, x, n, w)
	case b.useGemvBatch(n, w):
		b.gemvBatch(p, dst, x, n, w)
	case n <= gemvMaxN:
		b.gemv(p, dst, x, n, w)
	case b.isa == isaAVX512BF16 && w.DType == BF16:
		b.gemmBF16Dot(p, dst, x, n, w)
	default:
		b.gemm(p, dst, x, n, w)
	}
}

// gemv computes dst = x · Wᵀ as n matrix-vector products, parallel over
// blocks of about 64 KiB of weight rows (a multiple of 8 rows). For one
// row of x (decode) each thread takes a contiguous share of the blocks
// (ForShares), one long stream of reads, as the quantized decode does
// (2 threads, `ndbg bench --threads 2`, 2-core AMD EPYC Zen 5, medians of
// three alternating runs: 134m BF16 138 → 150 tokens/s, F32 106 → 110,
// 34m BF16 455 → 465, F32 312 → 343).
func (b Impl) gemv(p *Pool, dst, x []float32, n int, w *Mat) {
	K, R := w.Cols, w.Rows
	if n*R*K*w.DType.Size() < gemvSerialBytes {
		p = nil // waking a worker costs more than it saves
	}
	grain := max(8, (65536/(K*w.DType.Size())+7)&^7)
	rows := func(lo, hi int) {
		for i := range n {
			b.gemvRows(dst[i*R+lo:i*R+hi], x[i*K:i*K+K], w, lo)
		}
	}
	if n == 1 {
		chunks := (R + grain - 1) / grain
		p.ForShares(chunks, func(_, c, _ int) { rows(c*grain, min(R, (c+1)*grain)) })
		return
	}
	p.For(R, grain, rows)
}

// gemvRows sets d[j] = x · W[r0+j, :] for j < len(d): eight rows at a time,
// then four, then one, each kernel on the columns that fill its vectors
// (multiples of 32 for the AVX-512 eight-row kernels, of 8 for the AVX2
// ones), the remaining columns in Go.
func (b Impl) gemvRows(d, x []float32, w *Mat, r0 int) {
	K := w.Cols
	done, kd := 0, 0 // rows computed, and the columns they cover
	if r8 := len(d) &^ 7; r8 > 0 {
		switch k := K &^ 31; {
		case b.isa >= isaAVX512 && k > 0 && w.DType == BF16:
			gemv8BF16AVX512(&d[0], &x[0], &w.BF16[r0*K], r8, k, K)
			done, kd = r8, k
		case b.isa >= isaAVX512 && k > 0:
			gemv8F32AVX512(&d[0], &x[0], &w.F32[r0*K], r8, k, K)
			done, kd = r8, k
		case b.isa == isaAVX2 && K >= 8:
			gemv8AVX2(d[:r8], x, w, r0)
			done, kd = r8, K&^7
		}
		if done > 0 {
			b.gemvTail(d[:done], x, w, r0, kd)
		}
	}
	rest := d[done:]
	if len(rest) == 0 {
		return
	}
	width := 16
	if b.isa == isaAVX2 {
		width = 8
	}
	kv := K &^ (width - 1)
	r := r0 + done
	switch {
	case kv == 0:
		clear(rest)
	case w.DType == BF16 && b.isa >= isaAVX512:
		gemvBF16AVX512(&rest[0], &x[0], &w.BF16[r*K], len(rest), kv, K)
	case w.DType == BF16:
		gemvBF16AVX2(&rest[0], &x[0], &w.BF16[r*K], len(rest), kv, K)
	case b.isa >= isaAVX512:
		gemvF32AVX512(&rest[0], &x[0], &w.F32[r*K], len(rest), kv, K)
	default:
		gemvF32AVX2(&rest[0], &x[0], &w.F32[r*K], len(rest), kv, K)
	}
	b.gemvTail(rest, x, w, r, kv)
}

// gemvAheadBytes is the longest weight row for which the AVX2 eight-row
// kernels prefetch the next eight rows: on such rows (the 512-1024 columns
// of the small presets) the hardware prefetcher does not keep up with eight
// streams that each end after 16-32 cache lines (measured on Zen 3: BF16
// +10-45% over the same kernel without the prefetch); on longer rows it
// does, and the extra prefetches cost 5-25%.
const gemvAheadBytes = 2048

// gemv8AVX2 sets d[j] = x · W[r0+j, :K&^7] for j < len(d), a multiple of 8.
func gemv8AVX2(d, x []float32, w *Mat, r0 int) {
	K := w.Cols
	ahead := K*w.DType.Size() <= gemvAheadBytes
	switch {
	case w.DType == BF16 && ahead:
		gemv8BF16AVX2Next(&d[0], &x[0], &w.BF16[r0*K], len(d), K&^7, K)
	case w.DType == BF16:
		gemv8BF16AVX2(&d[0], &x[0], &w.BF16[r0*K], len(d), K&^7, K)
	case ahead:
		gemv8F32AVX2Next(&d[0], &x[0], &w.F32[r0*K], len(d), K&^7, K)
	default:
		gemv8F32AVX2(&d[0], &x[0], &w.F32[r0*K], len(d), K&^7, K)
	}
}

// gemvTail adds the columns [k0, K) to d[j] = x · W[r0+j, :].
func (b Impl) gemvTail(d, x []float32, w *Mat, r0, k0 int) {
	K := w.Cols
	if k0 == K {
		return
	}
	for j := range d {
		o := (r0 + j) * K
		if w.DType == BF16 {
			d[j] += dotBF16Go(x[k0:], w.BF16[o+k0:o+K])
		} else {
			d[j] += dotGo(x[k0:], w.F32[o+k0:o+K])
		}
	}
}

// gemvBatch computes dst = x · Wᵀ for a small batch, 2 ≤ n ≤ 8, by
// kernels that read each weight once for all n rows of x. The AVX-512
// four-vector kernel (n ≤ 4) always computes 4 rows of x (fewer are padded
// with zero rows into scratch) and rows of W in fours, the rest of the
// rows in Go; the Rows3 kernels (AVX-512 at n ≥ 5, AVX2 at n ≥ 4) take
// rows of W in threes, and the AVX2 one-row kernels the rest of the rows
// and smaller n. All leave the columns past the last whole vector to Go.
func (b Impl) gemvBatch(p *Pool, dst, x []float32, n int, w *Mat) {
	K, R := w.Cols, w.Rows
	kn, width, rowStep := n, 8, 1 // rows of x and W the kernel takes, vector width
	switch {
	case b.isa >= isaAVX512 && n <= 4:
		kn, width, rowStep = 4, 16, 4
	case b.isa >= isaAVX512:
		width = 16 // the AVX-512 Rows3 kernels'
	}
	kv := K &^ (width - 1)
	xs, d := x, dst // the kernel's x and output (kn rows each, both ldd = R)
	if n < kn {
		xs = make([]float32, kn*K)
		copy(xs, x[:n*K])
		d = make([]float32, kn*R)
	}
	if n*R*K*w.DType.Size() < gemvSerialBytes {
		p = nil
	}
	grain := max(4, (65536/(K*w.DType.Size())+3)&^3)
	p.For(R, grain, func(lo, hi int) {
		rk := lo + (hi-lo)/rowStep*rowStep // rows [lo, rk) in the kernel
		if rk > lo {
			b.gemvBatchKernel(d[lo:], R, xs, kn, w, lo, rk-lo, kv)
		}
		first := lo // the first row with columns left to Go
		if kv == K {
			first = rk
		}
		for i := range n {
			xi := xs[i*K : i*K+K]
			di := d[i*R : i*R+R]
			for r := first; r < hi; r++ {
				k0 := kv
				if r >= rk { // rows the kernel left: all of K here
					k0, di[r] = 0, 0
				}
				if w.DType == BF16 {
					di[r] += dotBF16Go(xi[k0:], w.BF16[r*K+k0:r*K+K])
				} else {
					di[r] += dotGo(xi[k0:], w.F32[r*K+k0:r*K+K])
				}
			}
			if n < kn {
				copy(dst[i*R+lo:i*R+hi], di[lo:hi])
			}
		}
	})
}

// gemvBatchKernel sets d[i*ldd+j] = Σ_{c<kv} x[i*K+c] · W[r0+j, c] for
// i < kn, j < rows with the small-batch kernel for kn rows of x (kv a
// multiple of the vector width; kv = 0 gives zeros).
func (b Impl) gemvBatchKernel(d []float32, ldd int, x []float32, kn int, w *Mat, r0, rows, kv int) {
	K := w.Cols
	if kv == 0 {
		for i := range kn {
			clear(d[i*ldd : i*ldd+rows])
		}
		return
	}
	if b.isa >= isaAVX512 && kn == 4 {
		if w.DType == BF16 {
			gemv4BF16AVX512(&d[0], ldd, &x[0], K, &w.BF16[r0*K], rows, kv, K)
		} else {
			gemv4F32AVX512(&d[0], ldd, &x[0], K, &w.F32[r0*K], rows, kv, K)
		}
		return
	}
	r3 := 0 // rows taken three at a time, as three streams of r3/3 rows
	if kn >= gemvRows3MinN {
		r3 = rows / 3 * 3
	}
	if b.isa >= isaAVX512 && r3 > 0 { // kn ≥ 5, kv a multiple of 16
		if w.DType == BF16 {
			gemvBatchBF16Rows3AVX512(kn, &d[0], ldd, &x[0], K, &w.BF16[r0*K], r3/3, kv, K)
		} else {
			gemvBatchF32Rows3AVX512(kn, &d[0], ldd, &x[0], K, &w.F32[r0*K], r3/3, kv, K)
		}
	}
	if w.DType == BF16 {
		if r3 > 0 && b.isa < isaAVX512 {
			gemvBatchBF16Rows3AVX2(kn, &d[0], ldd, &x[0], K, &w.BF16[r0*K], r3/3, kv, K)
		}
		if rows > r3 {
			gemvBatchBF16AVX2(kn, &d[r3], ldd, &x[0], K, &w.BF16[(r0+r3)*K], rows-r3, kv, K)
		}
		return
	}
	if r3 > 0 && b.isa < isaAVX512 {
		gemvBatchF32Rows3AVX2(kn, &d[0], ldd, &x[0], K, &w.F32[r0*K], r3/3, kv, K)
	}
	if rows > r3 {
		gemvBatchF32AVX2(kn, &d[r3], ldd, &x[0], K, &w.F32[(r0+r3)*K], rows-r3, kv, K)
	}
}

// gemvRows3MinN is the smallest n for which the AVX2 small-batch kernels
// hold three weight rows in registers (gemvBatch{4…8}{F32,BF16}Rows3AVX2).
const gemvRows3MinN = 4

// gemvBatchF32Rows3AVX2 calls the three-rows-at-a-time AVX2 kernel for n
// rows of x (4 ≤ n ≤ 8) on F32 weights: 3·m rows, taken as rows g, m+g
// and 2m+g together (three sequential streams), m = triples.
func gemvBatchF32Rows3AVX2(n int, dst *float32, ldd int, x *float32, ldx int, w *float32, triples, k, ldw int) {
	switch n {
	case 4:
		gemvBatch4F32Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 5:
		gemvBatch5F32Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 6:
		gemvBatch6F32Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 7:
		gemvBatch7F32Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	default:
		gemvBatch8F32Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	}
}

// gemvBatchBF16Rows3AVX2 is gemvBatchF32Rows3AVX2 for BF16 weights.
func gemvBatchBF16Rows3AVX2(n int, dst *float32, ldd int, x *float32, ldx int, w *uint16, triples, k, ldw int) {
	switch n {
	case 4:
		gemvBatch4BF16Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 5:
		gemvBatch5BF16Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 6:
		gemvBatch6BF16Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	case 7:
		gemvBatch7BF16Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	default:
		gemvBatch8BF16Rows3AVX2(dst, ldd, x, ldx, w, triples, k, ldw)
	}
}

// gemvBatchF32Rows3AVX512 calls the three-rows-at-a-time AVX-512 kernel
// for n rows of x (5 ≤ n ≤ 8) on F32 weights, as gemvBatchF32Rows3AVX2
// (k a multiple of 16).
func gemvBatchF32Rows3AVX512(n int, dst *float32, ldd int, x *float32, ldx int, w *float32, triples, k, ldw int) {
	switch n {
	case 5:
		gemvBatch5F32Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	case 6:
		gemvBatch6F32Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	case 7:
		gemvBatch7F32Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	default:
		gemvBatch8F32Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	}
}

// gemvBatchBF16Rows3AVX512 is gemvBatchF32Rows3AVX512 for BF16 weights.
func gemvBatchBF16Rows3AVX512(n int, dst *float32, ldd int, x *float32, ldx int, w *uint16, triples, k, ldw int) {
	switch n {
	case 5:
		gemvBatch5BF16Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	case 6:
		gemvBatch6BF16Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	case 7:
		gemvBatch7BF16Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	default:
		gemvBatch8BF16Rows3AVX512(dst, ldd, x, ldx, w, triples, k, ldw)
	}
}

// gemvBatchBF16AVX2 calls the AVX2 small-batch kernel for n rows of x
// (2 ≤ n ≤ 8) on BF16 weights.
func gemvBatchBF16AVX2(n int, dst *float32, ldd int, x *float32, ldx int, w *uint16, rows, k, ldw int) {
	switch n {
	case 2:
		gemvBatch2BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 3:
		gemvBatch3BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 4:
		gemvBatch4BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 5:
		gemvBatch5BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 6:
		gemvBatch6BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 7:
		gemvBatch7BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	default:
		gemvBatch8BF16AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	}
}

// gemvBatchF32AVX2 is gemvBatchBF16AVX2 for F32 weights.
func gemvBatchF32AVX2(n int, dst *float32, ldd int, x *float32, ldx int, w *float32, rows, k, ldw int) {
	switch n {
	case 2:
		gemvBatch2F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 3:
		gemvBatch3F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 4:
		gemvBatch4F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 5:
		gemvBatch5F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 6:
		gemvBatch6F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	case 7:
		gemvBatch7F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	default:
		gemvBatch8F32AVX2(dst, ldd, x, ldx, w, rows, k, ldw)
	}
}

// gemm computes dst = x · Wᵀ for n > gemvMaxN. x is packed K-major into
// panels of nr rows (the last one nr/2 wide when that holds the rest; zero
// padded), then the weights are walked in groups of mr rows, in parallel;
// each group (mr·K weights, in L1/L2) is multiplied with every panel of x by
// the register-tiled kernel, so every weight loaded from memory is used
// nr times from registers and n times overall.
//
// The AVX2 kernels store a tile straight into dst (transposed in
// registers); a tile that dst does not hold whole (the last group of fewer
// than mr weight rows, a panel's padding rows) goes to a scratch tile, as
// do the AVX-512 kernels' (stored transposed), and is copied into dst.
func (b Impl) gemm(p *Pool, dst, x []float32, n int, w *Mat) {
	K, R := w.Cols, w.Rows
	mr, nr := 12, 32
	if b.isa == isaAVX2 {
		mr, nr = 6, 16
	}
	type panel struct {
		i0, width int
		xp        []float32 // the packed rows, width·K
	}
	direct := b.isa == isaAVX2
	var panels []panel
	padded := 0 // rows of all panels
	for i0 := 0; i0 < n; {
		width := nr
		if n-i0 <= nr/2 {
			width = nr / 2
		}
		panels = append(panels, panel{i0: i0, width: width})
		padded += width
		i0 += width
	}
	// Each panel's buffer is taken (from the pool's scratch, and zeroed
	// when it has padding rows) by the thread that packs it: one buffer
	// for all, allocated on the caller before the job, kept the pool's
	// workers waiting 30-80 µs a product (34m, 128 rows, 2 threads), about
	// 2% of the prefill.
	p.For(len(panels), 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			pn := &panels[i]
			rows := min(pn.width, n-pn.i0)
			pn.xp = p.scratch(pn.width * K)
			if rows < pn.width {
				clear(pn.xp)
			}
			packPanel(pn.xp, x, pn.i0, rows, K, pn.width)
		}
	})
	defer func() {
		for _, pn := range panels {
			p.release(pn.xp)
		}
	}()
	// K is taken in blocks of kc so that one block of every panel (n·kc
	// floats) stays in L2 and one block of a weight group (mr·kc) in L1
	// while the tiles accumulate (in dst, or in the scratch tiles).
	kc := max(64, min(K, gemmPanelBytes/(4*padded))) &^ 1
	// The AVX2 tiles are stored in dst, and each K block after the first
	// reloads its tile from there: 16 rows R floats apart, which fall into
	// at most two sets of the 8-way L1 when R·4 is a multiple of 2 KiB and
	// evict each other between the blocks. K is then not blocked (Zen 3, n
	// = 128: 2048×768 and 2048×5632 products 6-15% faster, F32 and BF16;
	// 768×2048 and 5632×2048 were not faster with K whole).
	if direct && R*4%2048 == 0 {
		kc = K
	}
	if direct && len(panels) == 1 && R >= 2*mr {
		b.gemmStreams(p, dst, panels[0].xp, n, w, mr, panels[0].width, kc, panels[0].width == nr)
		return
	}
	// The weight groups are split into one contiguous share per thread
	// (ForShares), a group at a time: each thread writes its own columns
	// of dst, and the threads end within a group of each other. (For's
	// chunks of an eighth of a thread's share ended up to a chunk apart,
	// 100-200 µs at 34m's 128 rows, and chunks of two groups, interleaved
	// between the threads, were slower still: dst's cache lines then
	// travel between the cores.)
	groups := (R + mr - 1) / mr
	scratch := make([][]float32, p.Threads()) // per share: a tile per panel, for those not stored in dst
	p.ForShares(groups, func(s, lo, hi int) {
		for g := lo; g < hi; g++ {
			j0 := g * mr
			rows := min(mr, R-j0)
			var wf []float32
			var wb []uint16
			if w.DType == BF16 {
				wb = padGroup(w.BF16[j0*K:(j0+rows)*K], rows, mr, K)
			} else {
				wf = padGroup(w.F32[j0*K:(j0+rows)*K], rows, mr, K)
			}
			// inDst reports whether panel pn's tile is stored in dst.
			inDst := func(pn panel) bool { return direct && rows == mr && pn.i0+pn.width <= n }
			for k0 := 0; k0 < K; k0 += kc {
				kl := min(kc, K-k0)
				for pi, pn := range panels {
					xs := pn.xp[k0*pn.width : (k0+kl)*pn.width]
					out, ldo := dst[pn.i0*R+j0:], R
					if !inDst(pn) {
						if scratch[s] == nil {
							scratch[s] = make([]float32, len(panels)*12*32)
						}
						out, ldo = scratch[s][pi*12*32:(pi+1)*12*32], mr
					}
					b.gemmTile(kl, K, xs, wf[min(k0, len(wf)):], wb[min(k0, len(wb)):], out, ldo, pn.width == nr, k0 > 0)
				}
			}
			// Copy the scratch tiles into dst, row by row of dst, so each
			// write is a short contiguous run.
			for pi, pn := range panels {
				if inDst(pn) {
					continue
				}
				out := scratch[s][pi*12*32 : (pi+1)*12*32]
				si, sj := mr, 1 // element (i, j) of the tile is out[i*si+j*sj]
				if !direct {
					si, sj = 1, pn.width
				}
				for i := range min(pn.width, n-pn.i0) {
					d := dst[(pn.i0+i)*R+j0 : (pn.i0+i)*R+j0+rows]
					for j := range d {
						d[j] = out[i*si+j*sj]
					}
				}
			}
		}
	})
}

// gemmBF16Dot is gemm for BF16 weights with x rounded to BF16 as well:
// x is packed as BF16 column pairs and VDPBF16PS does two columns per
// instruction (an odd last column is added in float32).
func (b Impl) gemmBF16Dot(p *Pool, dst, x []float32, n int, w *Mat) {
	K, R := w.Cols, w.Rows
	const mr, nr = 12, 32
	P := K / 2
	type panel struct{ i0, width, off, wo int }
	var panels []panel
	off, wo := 0, 0
	for i0 := 0; i0 < n; {
		width := nr
		if n-i0 <= nr/2 {
			width = nr / 2
		}
		panels = append(panels, panel{i0, width, off, wo})
		off += width * P * 2
		wo += width
		i0 += width
	}
	// x in BF16 pairs, in the pool's scratch (a float32 buffer seen as
	// uint16s) rather than new memory each product: see Pool.floats.
	xpf := p.scratch((max(off, 1) + 1) / 2)
	defer p.release(xpf)
	xp := unsafe.Slice((*uint16)(unsafe.Pointer(&xpf[0])), max(off, 1))
	xlast := make([]float32, wo) // the odd last column, when K is odd
	p.For(len(panels), 1, func(lo, hi int) {
		for _, pn := range panels[lo:hi] {
			rows := min(pn.width, n-pn.i0)
			if rows < pn.width { // the padding rows: zeros
				clear(xp[pn.off : pn.off+pn.width*P*2])
			}
			for i := range rows {
				xr := x[(pn.i0+i)*K : (pn.i0+i+1)*K]
				for c := range P {
					o := pn.off + (c*pn.width+i)*2
					xp[o] = F32ToBF16(xr[2*c])
					xp[o+1] = F32ToBF16(xr[2*c+1])
				}
				if K&1 != 0 {
					xlast[pn.wo+i] = xr[K-1]
				}
			}
		}
	})
	kc := max(32, min(P, gemmPanelBytes/(4*wo)))
	groups := (R + mr - 1) / mr
	accs := make([][]float32, p.Threads()) // per share (see gemm)
	p.ForShares(groups, func(s, lo, hi int) {
		if accs[s] == nil {
			accs[s] = make([]float32, len(panels)*12*32)
		}
		acc := accs[s]
		for g := lo; g < hi; g++ {
			j0 := g * mr
			rows := min(mr, R-j0)
			wb := w.BF16[j0*K : (j0+rows)*K]
			if rows < mr { // the kernel reads mr rows: pad with zeros
				pad := make([]uint16, mr*K)
				copy(pad, wb)
				wb = pad
			}
			if P == 0 {
				clear(acc)
			}
			for c0 := 0; c0 < P; c0 += kc {
				kl := min(kc, P-c0)
				a := 0
				if c0 > 0 {
					a = 1
				}
				for pi, pn := range panels {
					xs := xp[pn.off+c0*pn.width*2:]
					out := acc[pi*12*32:]
					if pn.width == nr {
						gemmBF16DotAVX512(kl, &xs[0], &wb[2*c0], K, &out[0], a)
					} else {
						gemmBF16DotAVX512Half(kl, &xs[0], &wb[2*c0], K, &out[0], a)
					}
				}
			}
			for pi, pn := range panels {
				out := acc[pi*12*32 : pi*12*32+mr*pn.width]
				if K&1 != 0 {
					xl := xlast[pn.wo : pn.wo+pn.width]
					for j := range mr {
						wv := BF16ToF32(wb[j*K+K-1])
						o := out[j*pn.width : (j+1)*pn.width]
						for i := range o {
							o[i] += xl[i] * wv
						}
					}
				}
				cols := min(pn.width, n-pn.i0)
				for i := range cols {
					d := dst[(pn.i0+i)*R+j0 : (pn.i0+i)*R+j0+rows]
					for j := range d {
						d[j] = out[j*pn.width+i]
					}
				}
			}
		}
	})
}

// padGroup returns a weight group's rows as the tile kernels read them:
// ws itself when it holds all mr rows, else its rows (of K columns) and
// zeros up to mr rows, in a copy (the kernels read mr rows).
func padGroup[T float32 | uint16](ws []T, rows, mr, K int) []T {
	if rows >= mr {
		return ws
	}
	pad := make([]T, mr*K)
	copy(pad, ws[:rows*K])
	return pad
}

// gemmStreams is gemm for one panel of x (n ≤ 16 rows: a batched decode
// step whose x outgrew the small-batch kernels) on AVX2: the weight groups
// are rows g, m+g, …, (mr-1)·m+g of the first m·mr (m = R/mr), mr streams
// of m consecutive rows each, long sequential reads that the hardware
// prefetcher follows, where groups of neighbouring rows jump mr rows every
// mr rows (134m's 768×2048 F32 at n = 8: 0.84× the time; kernels/README.md).
// Each tile goes through a scratch tile into its columns of dst; the last
// R - m·mr rows are one zero-padded group of neighbours.
func (b Impl) gemmStreams(p *Pool, dst, xp []float32, n int, w *Mat, mr, width, kc int, full bool) {
	K, R := w.Cols, w.Rows
	m := R / mr
	groups := m
	if m*mr < R {
		groups++
	}
	p.ForShares(groups, func(_, lo, hi int) {
		tile := make([]float32, mr*width)
		for g := lo; g < hi; g++ {
			j0, ldw, rows, step := g, m*K, mr, m // the group's rows: j0 + j·step, j < rows
			if g == m {
				j0, ldw, rows, step = m*mr, K, R-m*mr, 1
			}
			var wf []float32
			var wb []uint16
			if w.DType == BF16 {
				wb = padGroup(w.BF16[j0*K:], rows, mr, K)
			} else {
				wf = padGroup(w.F32[j0*K:], rows, mr, K)
			}
			for k0 := 0; k0 < K; k0 += kc {
				kl := min(kc, K-k0)
				b.gemmTile(kl, ldw, xp[k0*width:(k0+kl)*width], wf[min(k0, len(wf)):], wb[min(k0, len(wb)):], tile, mr, full, k0 > 0)
			}
			for i := range n {
				d := dst[i*R+j0:]
				for j := range rows {
					d[j*step] = tile[i*mr+j]
				}
			}
		}
	})
}

// gemmTile computes the tile of weight rows j < mr by x rows i < nr (the
// kernel's full width when full, else half of it) over k columns:
// Σ_{c<k} xp[c*nr+i]·W[j*ldw+c] (of wf, or wb when wf is empty), added to
// the tile's element in out when acc. The AVX2 kernels put element (i, j)
// at out[i*ldo+j], the AVX-512 ones at out[j*nr+i] (ldo unused).
func (b Impl) gemmTile(k, ldw int, xp, wf []float32, wb []uint16, out []float32, ldo int, full, acc bool) {
	a := 0
	if acc {
		a = 1
	}
	f32 := len(wf) > 0
	switch {
	case f32 && b.isa >= isaAVX512 && full:
		gemmF32AVX512(k, &xp[0], &wf[0], ldw, &out[0], a)
	case f32 && b.isa >= isaAVX512:
		gemmF32AVX512Half(k, &xp[0], &wf[0], ldw, &out[0], a)
	case f32 && full:
		gemmF32AVX2(k, &xp[0], &wf[0], ldw, &out[0], ldo, a)
	case f32:
		gemmF32AVX2Half(k, &xp[0], &wf[0], ldw, &out[0], ldo, a)
	case b.isa == isaAVX2 && full:
		gemmBF16AVX2(k, &xp[0], &wb[0], ldw, &out[0], ldo, a)
	case b.isa == isaAVX2:
		gemmBF16AVX2Half(k, &xp[0], &wb[0], ldw, &out[0], ldo, a)
	default: // AVX-512 BF16: pairs of columns, then an odd last one
		ke := k &^ 1
		if full {
			gemmBF16AVX512(ke, &xp[0], &wb[0], ldw, &out[0], a)
		} else {
			gemmBF16AVX512Half(ke, &xp[0], &wb[0], ldw, &out[0], a)
		}
		if ke < k {
			const mr = 12
			nr := 32
			if !full {
				nr = 16
			}
			xl := xp[ke*nr : ke*nr+nr]
			for j := range mr {
				wv := BF16ToF32(wb[j*ldw+ke])
				o := out[j*nr : j*nr+nr]
				for i := range o {
					o[i] += xl[i] * wv
				}
			}
		}
	}
}

// packPanel writes rows [i0, i0+rows) of x (row length K) K-major into xp:
// xp[c*nr+i] = x[i0+i, c]; rows ≥ rows are left as they are (zero). Four
// rows at a time, so that each column's four values are one contiguous
// write (half the time of one row at a time, 34m's 128×512; eight rows
// at a time measured between the two).
func packPanel(xp, x []float32, i0, rows, K, nr int) {
	i := 0
	for ; i+4 <= rows; i += 4 {
		r0 := x[(i0+i)*K : (i0+i+1)*K]
		r1 := x[(i0+i+1)*K : (i0+i+2)*K][:len(r0)]
		r2 := x[(i0+i+2)*K : (i0+i+3)*K][:len(r0)]
		r3 := x[(i0+i+3)*K : (i0+i+4)*K][:len(r0)]
		for c := range r0 {
			o := xp[c*nr+i : c*nr+i+4 : c*nr+i+4]
			o[0], o[1], o[2], o[3] = r0[c], r1[c], r2[c], r3[c]
		}
	}
	for ; i < rows; i++ {
		xr := x[(i0+i)*K : (i0+i+1)*K]
		for c, v := range xr {
			xp[c*nr+i] = v
		}
	}
}

func (b Impl) dot(x, y []float32) float32 {
	if b.isa == isaGeneric || len(x) < 32 {
		return dotGo(x, y)
	}
	nv := len(x) &^ 31
	s := dotAVX2(&x[0], &y[0], nv)
	if nv < len(x) {
		s += dotGo(x[nv:], y[nv:])
	}
	return s
}

func (b Impl) sumSquares(x []float32) float32 {
	if b.isa == isaGeneric || len(x) < 32 {
		return sumSquaresGo(x)
	}
	nv := len(x) &^ 31
	s := sumSquaresAVX2(&x[0], nv)
	if nv < len(x) {
		s += sumSquaresGo(x[nv:])
	}
	return s
}

func (b Impl) axpy(dst []float32, a float32, x []float32) {
	nv := len(dst) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		axpyGo(dst, a, x)
		return
	}
	axpyAVX2(&dst[0], &x[0], a, nv)
	axpyGo(dst[nv:], a, x[nv:])
}

func (b Impl) scale(x []float32, a float32) {
	nv := len(x) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		scaleGo(x, a)
		return
	}
	scaleAVX2(&x[0], a, nv)
	scaleGo(x[nv:], a)
}

func (b Impl) add(dst, x, y []float32) {
	nv := len(dst) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		addGo(dst, x, y)
		return
	}
	addAVX2(&dst[0], &x[0], &y[0], nv)
	addGo(dst[nv:], x[nv:], y[nv:])
}

func (b Impl) mulScaled(dst, x, w []float32, s float32) {
	nv := len(dst) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		mulScaledGo(dst, x, w, s)
		return
	}
	mulScaledAVX2(&dst[0], &x[0], &w[0], s, nv)
	mulScaledGo(dst[nv:], x[nv:], w[nv:], s)
}

func (b Impl) dotRows(dst, x, m []float32, stride int) { dotRowsOf(b.isa, dst, x, m, stride) }

func (b Impl) axpyRows(dst, a, m []float32, stride int) {
	k := len(dst)
	kv := k &^ 31
	if b.isa == isaGeneric || kv == 0 {
		axpyRowsGo(dst, a, m, stride)
		return
	}
	axpyRowsAVX2(&dst[0], &a[0], &m[0], len(a), stride, kv)
	if kv < k {
		for j, v := range a {
			axpyGo(dst[kv:], v, m[j*stride+kv:j*stride+k])
		}
	}
}

func (b Impl) dotRowsBF16(dst, x []float32, m []uint16, stride int) {
	dotRowsOf(b.isa, dst, x, m, stride)
}

// dotRowsOf is dotRows on F32 or BF16 rows, with the matrix-vector
// kernels of the rows' type: eight rows at a time, then one (each on the
// columns that fill its vectors), the remaining columns in Go.
func dotRowsOf[T float32 | uint16](level isa, dst, x []float32, m []T, stride int) {
	k := len(x)
	if level == isaGeneric {
		dotRowsGoOf(dst, x, m, stride)
		return
	}
	done, kd := 0, 0 // rows computed by an eight-row kernel, and its columns
	if r8 := len(dst) &^ 7; r8 > 0 {
		if k32 := k &^ 31; level >= isaAVX512 && k32 > 0 {
			done, kd = r8, k32
		} else if k8 := k &^ 7; level == isaAVX2 && k8 > 0 {
			done, kd = r8, k8
		}
		if done > 0 {
			gemv8Of(level, dst, x, m, done, kd, stride)
		}
		if kd < k {
			for j := range done {
				dst[j] += dotGoOf(x[kd:], m[j*stride+kd:j*stride+k])
			}
		}
	}
	width := 16
	if level == isaAVX2 {
		width = 8
	}
	kv := k &^ (width - 1)
	rest := dst[done:]
	switch {
	case len(rest) == 0:
		return
	case kv == 0:
		dotRowsGoOf(rest, x, m[done*stride:], stride)
		return
	}
	gemv1Of(level, rest, x, m[done*stride:], kv, stride)
	if kv < k {
		for j := range rest {
			o := (done + j) * stride
			rest[j] += dotGoOf(x[kv:], m[o+kv:o+k])
		}
	}
}

// dotGoOf is dotGo or dotBF16Go, by m's type.
func dotGoOf[T float32 | uint16](x []float32, m []T) float32 {
	switch m := any(m).(type) {
	case []float32:
		return dotGo(x, m)
	case []uint16:
		return dotBF16Go(x, m)
	}
	return 0
}

// dotRowsGoOf is dotRowsGo or dotRowsBF16Go, by m's type.
func dotRowsGoOf[T float32 | uint16](dst, x []float32, m []T, stride int) {
	switch m := any(m).(type) {
	case []float32:
		dotRowsGo(dst, x, m, stride)
	case []uint16:
		dotRowsBF16Go(dst, x, m, stride)
	}
}

// gemv8Of runs the eight-row matrix-vector kernel of m's type on rows of
// k columns, stride apart.
func gemv8Of[T float32 | uint16](level isa, d, x []float32, m []T, rows, k, stride int) {
	switch m := any(m).(type) {
	case []float32:
		if level >= isaAVX512 {
			gemv8F32AVX512(&d[0], &x[0], &m[0], rows, k, stride)
		} else {
			gemv8F32AVX2(&d[0], &x[0], &m[0], rows, k, stride)
		}
	case []uint16:
		if level >= isaAVX512 {
			gemv8BF16AVX512(&d[0], &x[0], &m[0], rows, k, stride)
		} else {
			gemv8BF16AVX2(&d[0], &x[0], &m[0], rows, k, stride)
		}
	}
}

// gemv1Of runs the one-row matrix-vector kernel of m's type on len(d) rows
// of k columns, stride apart.
func gemv1Of[T float32 | uint16](level isa, d, x []float32, m []T, k, stride int) {
	switch m := any(m).(type) {
	case []float32:
		if level >= isaAVX512 {
			gemvF32AVX512(&d[0], &x[0], &m[0], len(d), k, stride)
		} else {
			gemvF32AVX2(&d[0], &x[0], &m[0], len(d), k, stride)
		}
	case []uint16:
		if level >= isaAVX512 {
			gemvBF16AVX512(&d[0], &x[0], &m[0], len(d), k, stride)
		} else {
			gemvBF16AVX2(&d[0], &x[0], &m[0], len(d), k, stride)
		}
	}
}

// axpyRowsBF16 is axpyRows on BF16 rows: on AVX-512 its kernel over the
// multiples of 32 columns, then the AVX2 kernel over the multiples of 16,
// the rest in Go.
func (b Impl) axpyRowsBF16(dst, a []float32, m []uint16, stride int) {
	k := len(dst)
	kv := k &^ 15
	if b.isa == isaGeneric || kv == 0 {
		axpyRowsBF16Go(dst, a, m, stride)
		return
	}
	k32 := 0 // the columns of the AVX-512 kernel, the rest's AVX2 (multiples of 16)
	if b.isa >= isaAVX512 {
		k32 = k &^ 31
	}
	if k32 > 0 {
		axpyRowsBF16AVX512(&dst[0], &a[0], &m[0], len(a), stride, k32)
	}
	c := k32 // then whole rows of 64 and of 32 columns, the rest 16 at a time
	for ; c+64 <= kv; c += 64 {
		axpyRowsBF16WideAVX2(&dst[c], &a[0], &m[c], len(a), stride, 64)
	}
	if c+32 <= kv {
		axpyRowsBF16WideAVX2(&dst[c], &a[0], &m[c], len(a), stride, 32)
		c += 32
	}
	if kv > c {
		axpyRowsBF16AVX2(&dst[c], &a[0], &m[c], len(a), stride, kv-c)
	}
	if kv < k {
		for j, v := range a {
			axpyBF16Go(dst[kv:], v, m[j*stride+kv:j*stride+k])
		}
	}
}

func (b Impl) swiglu(dst, gate, up []float32) {
	nv := len(dst) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		swigluGo(dst, gate, up)
		return
	}
	swigluAVX2(&dst[0], &gate[0], &up[0], nv)
	swigluGo(dst[nv:], gate[nv:], up[nv:])
}

// maxScan returns the largest element of x that is not NaN (-Inf when
// none is) and whether x holds a NaN.
func (b Impl) maxScan(x []float32) (m float32, nan bool) {
	nv := len(x) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		return maxScanGo(x)
	}
	m, nan = maxAVX2(&x[0], nv)
	m2, nan2 := maxScanGo(x[nv:])
	return max(m, m2), nan || nan2
}

func (b Impl) expShifted(dst, x []float32) float64 {
	return b.expShiftedBy(dst, x, shiftOf(b.maxScan(x)))
}

// expShiftedBy sets dst[i] = exp(x[i] - m) and returns their sum.
func (b Impl) expShiftedBy(dst, x []float32, m float32) float64 {
	nv := len(x) &^ 7
	if b.isa == isaGeneric || nv == 0 {
		return expShiftedByGo(dst, x, m)
	}
	return float64(expSumAVX2(&dst[0], &x[0], m, nv)) + expShiftedByGo(dst[nv:], x[nv:], m)
}

func (b Impl) softmax(x []float32) {
	if b.isa == isaGeneric || len(x) < 8 {
		softmaxGo(x)
		return
	}
	b.scale(x, float32(1/b.expShifted(x, x)))
}

// qdot is the quantized product of rows weight rows with nx ≤ qTile rows
// of x (see qdotGo): the AVX2 kernels (generated by gen_quant.py) on every
// assembly level of a CPU with F16C, Go otherwise; on the AVX-512 levels of
// a CPU with AVX-512 BW, VL and VNNI, the AVX-512 kernels of Q4_K and Q6_K.
func (b Impl) qdot(dt DType, d []float32, ldd int, w []byte, rb, rows int, a *qact, K, i0, nx int) {
	if b.isa == isaGeneric || !hasF16C || rows == 0 {
		qdotGo(dt, d, ldd, w, rb, rows, a, K, i0, nx)
		return
	}
	nb := K / dt.BlockLen()
	var xq *int8
	var xd *float32
	var xs *byte
	if actQ8K(dt) {
		xq, xd = &a.q[i0*K], &a.d[i0*nb]
		xs = (*byte)(unsafe.Pointer(&a.bs[i0*nb*16]))
	} else { // block pairs (see qact)
		np := pairsOf(K)
		xq, xd = &a.q[i0*np*64], &a.d[i0*np*2]
		xs = (*byte)(unsafe.Pointer(&a.s[i0*np*2]))
	}
	_ = d[(nx-1)*ldd+rows-1] // the kernel writes d[i*ldd+j], i < nx, j < rows
	_ = w[rows*rb-1]
	if k, ok := qdotAVX512[dt]; ok && b.isa >= isaAVX512 && hasQuant512 {
		k[nx-1](&d[0], ldd, &w[0], rows, nb, xq, xd, xs)
		return
	}
	qdotAVX2[dt][nx-1](&d[0], ldd, &w[0], rows, nb, xq, xd, xs)
}

// quantRowQ8_0 quantizes one row of x (whole blocks of 32) into qact's
// pair layout from q, d and s (strides in bytes between pairs), by
// quantRowQ8_0AVX2; false when the CPU lacks AVX2 and F16C or the row
// holds a NaN or an Inf (the caller then quantizes it in Go).
func quantRowQ8_0(x []float32, q []int8, qstride int, d, s []float32, dstride int) bool {
	nb := len(x) / qk0
	if !hasAVX2FMA || !hasF16C || nb == 0 {
		return false
	}
	np := (nb + 1) / 2
	_ = q[(np-1)*qstride+63]
	_ = d[((np-1)*dstride)/4+1]
	_ = s[((np-1)*dstride)/4+1]
	return quantRowQ8_0AVX2(&x[0], nb, &q[0], qstride, &d[0], &s[0], dstride)
}

// quantRowQ8K quantizes one row of x (whole blocks of 256) into qact's
// tile layout from q, d and bs (strides in bytes between blocks), by
// quantRowQ8KAVX2; false when the CPU lacks AVX2 or a block is zero or not
// finite (the caller then quantizes the row in Go).
func quantRowQ8K(x []float32, q []int8, qstride int, d []float32, dstride int, bs []int16, bstride int) bool {
	nb := len(x) / qkK
	if !hasAVX2FMA || nb == 0 {
		return false
	}
	_ = q[(nb-1)*qstride+255]
	_ = d[(nb-1)*dstride/4]
	_ = bs[(nb-1)*bstride/2+15]
	return quantRowQ8KAVX2(&x[0], nb, &q[0], qstride, &d[0], dstride, &bs[0], bstride)
}

// packs reports whether the CPU runs kernels on packed matrices (Pack) of
// type dt: every packed type, with AVX-512 BW, VL and VNNI or with AVX2,
// FMA and F16C (Q6_K in a layout of its own there: packQ6_KAVX2).
func packs(dt DType) bool {
	return (hasQuant512 || hasAVX2FMA && hasF16C) && (dt == Q8_0 || dt == Q5_0 || dt == Q4_K || dt == Q6_K)
}

// packsForAVX2 reports whether Pack lays matrices out for the AVX2
// kernels (Q6_K: packQ6_KAVX2; Q8_0: signed quants, packQ32) rather than
// the AVX-512 ones: on a CPU without the AVX-512 kernels.
func packsForAVX2() bool { return !hasQuant512 }

// qdotPacked computes rows [lo, hi) of a packed matrix (Pack; lo a
// multiple of 16) with nx ≤ packedTile rows of x from row i0 (a tile's
// first row), into d (d[i*ldd + r - lo]) by the packed kernel, as far as
// whole groups go, and returns the first row it did not compute. On the
// AVX-512 levels, and on AVX2 for the types it packs: Q8_0 and Q6_K only
// where Pack laid them out for AVX2 (packsForAVX2, on a CPU without the
// AVX-512 kernels), and Q6_K not for a single row of x
// (readsQ6_KPackedAVX2).
func (b Impl) qdotPacked(m *Mat, d []float32, ldd, lo, hi int, a *qact, K, i0, nx int) int {
	avx2 := false
	if b.isa == isaAVX2 {
		switch m.DType {
		case Q5_0, Q4_K:
			avx2 = true
		case Q8_0:
			avx2 = packsForAVX2()
		case Q6_K:
			avx2 = b.readsQ6_KPackedAVX2(nx)
		}
	}
	if m.pk == nil || (b.isa < isaAVX512 && !avx2) || lo%16 != 0 {
		return lo
	}
	g1 := hi / 16
	if g1*16 <= lo {
		return lo
	}
	_ = d[(nx-1)*ldd+(g1*16-lo)-1]
	i1 := i0 // the second tile's first row (rows past qTile)
	if nx > qTile {
		i1 += qTile
	}
	if avx2 { // a tile of x at a time, the group's blocks then in L1 or L2
		tiles := [2]struct{ i, nx, d int }{{i0, min(nx, qTile), 0}, {i1, nx - qTile, qTile * ldd}}
		for g := lo / 16; g < g1; g++ {
			for _, t := range tiles {
				if t.nx <= 0 {
					break
				}
				dg, nb := &d[t.d+g*16-lo], K/qkK
				switch m.DType {
				case Q4_K:
					qdotQ4_KP16AVX2[t.nx-1](dg, ldd, &m.pk[g*nb*packedQ4_K], nb, &a.q[t.i*K], &a.d[t.i*nb], &a.s32[t.i*nb*4])
				case Q6_K:
					qdotQ6_KP16AVX2[t.nx-1](dg, ldd, &m.pk[g*nb*packedQ6_KAVX2], nb, &a.u[t.i*K], &a.d[t.i*nb])
				default: // Q8_0, Q5_0
					nb0, np := K/qk0, pairsOf(K) // blocks of 32, and their pairs
					k := qdotQ8_0P16AVX2
					if m.DType == Q5_0 {
						k = qdotQ5_0P16AVX2
					}
					k[t.nx-1](dg, ldd, &m.pk[g*nb0*qk0Packed], nb0, &a.q[t.i*np*64], &a.d[t.i*np*2], &a.s[t.i*np*2])
				}
			}
		}
		return g1 * 16
	}
	switch m.DType {
	case Q4_K, Q6_K:
		nb := K / qkK
		k, size, xs, per := qdotQ4_KP16[nx-1], packedQ4_K, a.s32, 4
		if m.DType == Q6_K {
			k, size, xs, per = qdotQ6_KP16[nx-1], packedQ6_K, a.o16, 16
		}
		for g := lo / 16; g < g1; g++ {
			k(&d[g*16-lo], ldd, &m.pk[g*nb*size], nb, &a.q[i0*K], &a.d[i0*nb], &xs[i0*nb*per],
				&a.q[i1*K], &a.d[i1*nb], &xs[i1*nb*per])
		}
	default:
		nb := K / qk0
		np := pairsOf(K)
		k := qdotQ8_0P16[nx-1]
		if m.DType == Q5_0 {
			k = qdotQ5_0P16[nx-1]
		}
		for g := lo / 16; g < g1; g++ {
			k(&d[g*16-lo], ldd, &m.pk[g*nb*qk0Packed], nb, &a.q[i0*np*64], &a.d[i0*np*2], &a.s[i0*np*2],
				&a.q[i1*np*64], &a.d[i1*np*2], &a.s[i1*np*2])
		}
	}
	return g1 * 16
}

// axpyRowsManyOf is AxpyRowsMany over rows rows of m with the assembly
// kernels over the columns they take (AVX-512: 8, 4, 2 and 1 rows of dst,
// multiples of 32 columns; AVX2: 4, 2 and 1 rows, multiples of 16); the
// other columns, and every column on the other levels, one row of dst at a
// time (axpyRows).
func axpyRowsManyOf[T float32 | uint16](b Impl, dst []float32, ldd, width int, a []float32, lda, n int, m []T, stride, rows int) {
	kw, sizes := 0, []int(nil)
	switch {
	case b.isa >= isaAVX512:
		kw, sizes = width&^31, []int{8, 4, 2, 1}
	case b.isa == isaAVX2:
		kw, sizes = width&^15, []int{4, 2, 1}
	}
	if kw > 0 {
		for i := 0; i < n; {
			g := 1
			for _, size := range sizes {
				if n-i >= size {
					g = size
					break
				}
			}
			manyKernelOf(b.isa >= isaAVX512, g, &dst[i*ldd], ldd, &a[i*lda], lda, m, stride, rows, kw)
			i += g
		}
	}
	if kw < width {
		axpyRowsManyGoOf(b, dst[kw:], ldd, width-kw, a, lda, n, m[kw:], stride, rows)
	}
}

// The AxpyRowsMany kernels by log2 of their rows of dst.
var (
	axpyManyF32AVX512 = [4]func(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int){
		axpyRowsMany1F32AVX512, axpyRowsMany2F32AVX512, axpyRowsMany4F32AVX512, axpyRowsMany8F32AVX512,
	}
	axpyManyBF16AVX512 = [4]func(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int){
		axpyRowsMany1BF16AVX512, axpyRowsMany2BF16AVX512, axpyRowsMany4BF16AVX512, axpyRowsMany8BF16AVX512,
	}
	axpyManyF32AVX2 = [3]func(dst *float32, ldd int, a *float32, lda int, m *float32, stride, rows, k int){
		axpyRowsMany1F32AVX2, axpyRowsMany2F32AVX2, axpyRowsMany4F32AVX2,
	}
	axpyManyBF16AVX2 = [3]func(dst *float32, ldd int, a *float32, lda int, m *uint16, stride, rows, k int){
		axpyRowsMany1BF16AVX2, axpyRowsMany2BF16AVX2, axpyRowsMany4BF16AVX2,
	}
)

// manyKernelOf calls the AxpyRowsMany kernel (AVX-512 or AVX2) of g rows
// of dst for m's element type.
func manyKernelOf[T float32 | uint16](avx512 bool, g int, dst *float32, ldd int, a *float32, lda int, m []T, stride, rows, k int) {
	l := bits.TrailingZeros(uint(g))
	switch m := any(m).(type) {
	case []float32:
		if avx512 {
			axpyManyF32AVX512[l](dst, ldd, a, lda, &m[0], stride, rows, k)
		} else {
			axpyManyF32AVX2[l](dst, ldd, a, lda, &m[0], stride, rows, k)
		}
	case []uint16:
		if avx512 {
			axpyManyBF16AVX512[l](dst, ldd, a, lda, &m[0], stride, rows, k)
		} else {
			axpyManyBF16AVX2[l](dst, ldd, a, lda, &m[0], stride, rows, k)
		}
	}
}
