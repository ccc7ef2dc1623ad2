package kernels

import "math"

// PackQ8_0 gives a Q8_0 matrix (or each Q8_0 part of a matrix of parts) a
// second copy of its weights packed for the AVX-512 VNNI outer-product
// kernel, when this CPU has it (nothing happens otherwise, or for other
// types): groups of 16 rows, per block the rows' quants interleaved four
// at a time (lane r of 64-byte vector g holds quants 4g…4g+3 of row r,
// plus 128: unsigned) and then their 16 scales as float32, 576 bytes a
// block. Products then read the packed copy (the original is left to the
// page cache when mapped) and, per block, do the float work once for 16
// rows (llama.cpp repacks its Q8_0 weights likewise on this CPU), decode
// included (34m Q8_0 decode 598 → 700 tokens/s, 134m 178 → 185,
// BenchmarkDecodeGGUF, 1 thread, AMD EPYC Zen 5). A matrix's last Rows
// mod 16 rows stay on the row kernels. The packed copy takes 576/544 of the weights' memory beside them; call
// PackQ8_0 before the matrix is shared (it sets an unexported field).
func PackQ8_0(m *Mat) { packQ32(m, Q8_0) }

// PackQ5_0 is PackQ8_0 for Q5_0 matrices (what Q4_K_M files hold for rows
// that are not whole Q4_K blocks): their 5-bit quants 0…31 as bytes, the
// kernel taking off 16 where Q8_0's takes off 128.
func PackQ5_0(m *Mat) { packQ32(m, Q5_0) }

// packQ32 is PackQ8_0 and PackQ5_0.
func packQ32(m *Mat, dt DType) {
	if m == nil || !hasPackedQ8_0() {
		return
	}
	if m.Parts != nil {
		for _, p := range m.Parts {
			packQ32(p, dt)
		}
		return
	}
	if m.DType != dt || m.Check() != nil || m.Rows < 16 || m.pk != nil {
		return
	}
	bb := dt.BlockBytes()
	nb := m.Cols / qk0
	groups := m.Rows / 16
	rb := nb * bb
	pk := make([]byte, groups*nb*576)
	AdviseHugePages(pk)
	var q [qk0]uint8
	for g := range groups {
		for b := range nb {
			out := pk[(g*nb+b)*576 : (g*nb+b+1)*576]
			for r := range 16 {
				blk := m.Q[(g*16+r)*rb+b*bb:]
				if dt == Q8_0 {
					for j := range qk0 {
						q[j] = blk[2+j] + 128
					}
				} else {
					qh := le32(blk[2:])
					for j, v := range blk[6:22] {
						q[j] = v&15 | uint8(qh>>j&1)<<4
						q[j+16] = v>>4 | uint8(qh>>(j+16)&1)<<4
					}
				}
				for k := range 8 {
					copy(out[k*64+r*4:k*64+r*4+4], q[4*k:4*k+4])
				}
				bits := math.Float32bits(F16ToF32(le16(blk)))
				out[512+4*r], out[513+4*r], out[514+4*r], out[515+4*r] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
			}
		}
	}
	m.pk = pk
}

// PackQ4_K is PackQ8_0 for Q4_K matrices: per group of 16 rows and
// super-block, per sub-block of 32 values four 64-byte vectors whose lane
// r holds row r's values 4v…4v+3 in its low nibbles and 4(v+4)…4(v+4)+3
// in its high ones (256 bytes), then the block's scales and mins as bytes
// (sc[j·16 + r], m[j·16 + r]: 128 bytes each) and d and dmin per row as
// float32 (64 each): 2432 bytes a block of 16 rows, 1.056 times the
// blocks' bytes, beside them. The kernel sums a block's products in
// integers, so the bytes are what it needs; decode reads this copy too
// (1 thread, against the row kernels on the blocks: 34m Q4_K_M 852 → 964
// tokens/s, 134m 263 → 271). Prefill is 20-23% faster at 1 thread, 3-11%
// at 2, than with the earlier copy of float scales (4/3 of the bytes).
func PackQ4_K(m *Mat) {
	if m == nil || !hasPackedQ8_0() {
		return
	}
	if m.Parts != nil {
		for _, p := range m.Parts {
			PackQ4_K(p)
		}
		return
	}
	if m.DType != Q4_K || m.Check() != nil || m.Rows < 16 || m.pk != nil {
		return
	}
	nb := m.Cols / qkK
	groups := m.Rows / 16
	rb := nb * bytesQ4_K
	pk := make([]byte, groups*nb*packedQ4_K)
	AdviseHugePages(pk)
	put := func(b []byte, f float32) {
		u := math.Float32bits(f)
		b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	var q [qkK]uint8
	for g := range groups {
		for b := range nb {
			out := pk[(g*nb+b)*packedQ4_K : (g*nb+b+1)*packedQ4_K]
			for r := range 16 {
				blk := m.Q[(g*16+r)*rb+b*bytesQ4_K:]
				qs := blk[16:144]
				for c := range 4 {
					for l := range 32 {
						q[64*c+l] = qs[32*c+l] & 15
						q[64*c+32+l] = qs[32*c+l] >> 4
					}
				}
				for j := range 8 {
					sub := out[256*j:]
					for v := range 4 {
						for jj := range 4 {
							sub[64*v+4*r+jj] = q[32*j+4*v+jj] | q[32*j+4*(v+4)+jj]<<4
						}
					}
					out[2048+16*j+r], out[2176+16*j+r] = scaleMinK4(j, blk[4:16])
				}
				put(out[2304+4*r:], F16ToF32(le16(blk)))
				put(out[2368+4*r:], F16ToF32(le16(blk[2:])))
			}
		}
	}
	m.pk = pk
}

// packedQ4_K is the size of a super-block of 16 rows in PackQ4_K's layout.
const packedQ4_K = 2432
