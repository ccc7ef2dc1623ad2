package kernels

import "math"

// Pack gives a quantized matrix (or each quantized part of a matrix of
// parts) a second copy of its weights packed for the outer-product
// kernels, when this CPU has them for its type (nothing happens
// otherwise): Q8_0, Q5_0, Q4_K and Q6_K, with AVX-512 VNNI or with AVX2
// (Q6_K then in a layout of its own, packQ6_KAVX2, and Q8_0's quants
// signed: packsForAVX2). Groups of 16 rows whose
// quants are interleaved four at a time, so that one VPDPBUSD multiplies
// four quants of a row of x (broadcast) with four of each of the 16 rows
// (AVX2: one VPMADDUBSW with those of 8 rows) and the float work of a
// block is done once for 16 rows (llama.cpp repacks its weights likewise
// on AVX-512 CPUs). Products then read the packed copy, decode included
// (the original is left to the page cache when mapped; but AVX2 decodes
// Q6_K from the blocks, see packQ6_KAVX2); a matrix's last Rows mod 16
// rows stay on the row kernels.
// The copy takes about as much memory again beside the weights (below,
// per type); call Pack before the matrix is shared (it sets an unexported
// field). Packing a matrix twice, or one of another type, does nothing.
func Pack(m *Mat) {
	if m == nil {
		return
	}
	if m.Parts != nil {
		for _, p := range m.Parts {
			Pack(p)
		}
		return
	}
	if !packs(m.DType) || m.Check() != nil || m.Rows < 16 || m.pk != nil {
		return
	}
	switch m.DType {
	case Q8_0, Q5_0:
		packQ32(m)
	case Q4_K:
		packQ4_K(m)
	case Q6_K:
		if packsForAVX2() {
			packQ6_KAVX2(m)
		} else {
			packQ6_K(m)
		}
	}
}

// packQ32 packs Q8_0 and Q5_0 matrices: per group of 16 rows and block,
// eight 64-byte vectors, lane r of vector g holding quants 4g…4g+3 of row
// r as bytes (Q8_0's plus 128, unsigned, for the AVX-512 kernels, and as
// they are, signed, for the AVX2 ones (packsForAVX2); Q5_0's 5-bit quants
// 0…31, the kernel taking off 16 where Q8_0's takes off 128), and the rows' 16
// scales as float16, as in the blocks. Blocks go in pairs, the two blocks'
// vectors then their scales (1088 bytes, 17 cache lines, so that every
// vector stays on one line); an odd last block is its vectors then its
// scales. The copy is as large as the blocks (an earlier one with float32
// scales, 576 bytes a block, was 1.06 times): decode reads it at the
// memory's pace (ndbg bench, 1 thread, AMD EPYC Zen 5, four alternating
// rounds: 34m Q8_0 decode 699-877 → 738-952 tokens/s, 134m 172-183 →
// 182-221).
func packQ32(m *Mat) {
	var q [qk0]uint8
	offset := uint8(128) // Q8_0's quants as VPDPBUSD takes them: unsigned
	if packsForAVX2() {
		offset = 0 // the AVX2 kernels take their magnitudes and signs
	}
	nb := m.Cols / qk0
	packRows(m, nb*qk0Packed, func(group []byte, b, r int, blk []byte) {
		if m.DType == Q8_0 {
			for j := range qk0 {
				q[j] = blk[2+j] + offset
			}
		} else {
			qh := le32(blk[2:])
			for j, v := range blk[6:22] {
				q[j] = v&15 | uint8(qh>>j&1)<<4
				q[j+16] = v>>4 | uint8(qh>>(j+16)&1)<<4
			}
		}
		w, sc := q32Place(b, nb)
		for k := range 8 {
			copy(group[w+k*64+r*4:w+k*64+r*4+4], q[4*k:4*k+4])
		}
		copy(group[sc+2*r:sc+2*r+2], blk[:2])
	})
}

// qk0Packed is the size of a block of 16 rows in packQ32's layout.
const qk0Packed = 544

// q32Place returns where block b of a group of nb blocks has its vectors
// and its scales in packQ32's layout, from the group's start.
func q32Place(b, nb int) (vectors, scales int) {
	p := b / 2 * 2 * qk0Packed
	switch {
	case b%2 == 1:
		return p + 512, p + 1024 + 32
	case b == nb-1:
		return p, p + 512
	}
	return p, p + 1024
}

// packQ4_K packs Q4_K matrices: per group of 16 rows and super-block, per
// sub-block of 32 values four 64-byte vectors whose lane r holds row r's
// values 4v…4v+3 in its low nibbles and 4(v+4)…4(v+4)+3 in its high ones
// (256 bytes), then the block's scales and mins as bytes (sc[j·16 + r];
// the mins of sub-blocks 2p and 2p+1 side by side, m[32p + 2r + j%2], the
// int16 pairs VPDPWSSD takes once widened: 128 bytes each) and d and dmin
// per row as float16, as in the blocks (32 each): 2368 bytes a block of 16
// rows (37 cache lines), 1.028 times the blocks' bytes (float32 d and dmin
// made it 1.056).
// The kernel sums a block's products in integers, so the bytes are what
// it needs (1 thread, against the row kernels on the blocks: 34m Q4_K_M
// decode 852 → 964 tokens/s, 134m 263 → 271). Prefill is 20-23% faster at
// 1 thread, 3-11% at 2, than with an earlier copy of float scales (4/3 of
// the bytes).
func packQ4_K(m *Mat) {
	var q [qkK]uint8
	packRows(m, m.Cols/qkK*packedQ4_K, func(group []byte, b, r int, blk []byte) {
		out := group[b*packedQ4_K:]
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
			out[2048+16*j+r], out[2176+32*(j/2)+2*r+j%2] = scaleMinK4(j, blk[4:16])
		}
		copy(out[2304+2*r:2304+2*r+2], blk[:2])  // d
		copy(out[2336+2*r:2336+2*r+2], blk[2:4]) // dmin
	})
}

// packedQ4_K is the size of a super-block of 16 rows in packQ4_K's layout.
const packedQ4_K = 2368

// packQ6_K packs Q6_K matrices: per group of 16 rows and super-block, per
// 32 values (p = 0…7) 384 bytes: four 64-byte vectors whose lane r holds
// the low four bits of row r's values 32p+4v … 32p+4v+3 in its low
// nibbles and of 32p+16+4v … in its high ones, then two vectors of the
// high two bits, lane r of vector h holding those of values
// 32p+16h+4k … 32p+16h+4k+3 in bits 2k, 2k+1 (k = 0…3); then the rows'
// sixteen int8 scales (sc[j·16 + r], 256 bytes) and d per row as float32
// (64): 3392 bytes a block of 16 rows, 1.01 times the blocks' bytes.
func packQ6_K(m *Mat) {
	var q [qkK]uint8
	packRows(m, m.Cols/qkK*packedQ6_K, func(group []byte, b, r int, blk []byte) {
		out := group[b*packedQ6_K:]
		q6Values(blk, &q)
		for p := range 8 {
			o := out[384*p:]
			for v := range 4 {
				for jj := range 4 {
					o[64*v+4*r+jj] = q[32*p+4*v+jj]&15 | (q[32*p+16+4*v+jj]&15)<<4
				}
			}
			for h := range 2 {
				for jj := range 4 {
					var hb uint8
					for k := range 4 {
						hb |= q[32*p+16*h+4*k+jj] >> 4 << (2 * k)
					}
					o[256+64*h+4*r+jj] = hb
				}
			}
		}
		for j := range 16 {
			out[3072+16*j+r] = blk[192+j]
		}
		putF32(out[3328+4*r:], F16ToF32(le16(blk[208:])))
	})
}

// packQ6_KAVX2 packs Q6_K matrices for the AVX2 kernels, which have no
// VPDPBUSD: per group of 16 rows and super-block, per sub-block of 16
// values (s = 0…15) and quadruple v = 0…3 of it a 64-byte line whose
// 32-byte half h holds rows 8h…8h+7's values 16s+4v … 16s+4v+3 (lane r,
// row 8h+r) as signed bytes q - 32, unpacked (4096 bytes); then the
// scales, row 8h+r's of sub-block s at 4096 + 16s + 8h + r (256); d per
// row as float16 (32); and per row the int32 C = 128·Σ_s sc_s·Σ (q - 32)
// over the block (64): 4480 bytes with padding to a whole cache line,
// 1.33 times the blocks' bytes. The kernel multiplies x + 128 (unsigned,
// x's quants with the top bit flipped) by q - 32: a pair of products
// fills at most 2·255·32 = 16320 of an int16, so two quadruples are
// summed before the VPMADDWD by the scales, and C takes off what the 128
// added, a constant of the weights. With 6-bit quants unpacked in the
// kernel (the AVX-512 layout, packQ6_K) the unpacking cost as much as the
// multiplies, and a per-row-of-x offset (x's sums times -32 times the
// scales) a multiply more (bench/RESULTS.md). Decode (one row of x) reads
// the blocks with the row kernel instead: it streams the fewer bytes.
func packQ6_KAVX2(m *Mat) {
	var q [qkK]uint8
	packRows(m, m.Cols/qkK*packedQ6_KAVX2, func(group []byte, b, r int, blk []byte) {
		out := group[b*packedQ6_KAVX2:]
		q6Values(blk, &q)
		h, rr := r/8, r%8
		var c int32
		for s := range 16 {
			sc := int8(blk[192+s])
			sum := int32(0)
			for v := range 4 {
				for j := range 4 {
					w := int8(q[16*s+4*v+j]) - 32
					out[(4*s+v)*64+32*h+4*rr+j] = byte(w)
					sum += int32(w)
				}
			}
			out[4096+16*s+8*h+rr] = byte(sc)
			c += int32(sc) * sum
		}
		copy(out[4352+2*r:4352+2*r+2], blk[208:210]) // d
		putLE32(out[4384+4*r:], uint32(128*c))
	})
}

// packedQ6_KAVX2 is the size of a super-block of 16 rows in packQ6_KAVX2's
// layout.
const packedQ6_KAVX2 = 4480

// packRows makes m's packed copy: per group of 16 rows (m's last Rows mod
// 16 rows left out), size bytes, which put fills with row r's share of
// block b from that row's block blk.
func packRows(m *Mat, size int, put func(group []byte, b, r int, blk []byte)) {
	bb := m.DType.BlockBytes()
	nb := m.Cols / m.DType.BlockLen()
	rb := nb * bb
	groups := m.Rows / 16
	pk := make([]byte, groups*size)
	AdviseHugePages(pk)
	for g := range groups {
		group := pk[g*size : (g+1)*size]
		for b := range nb {
			for r := range 16 {
				put(group, b, r, m.Q[(g*16+r)*rb+b*bb:])
			}
		}
	}
	m.pk = pk
}

// packedQ6_K is the size of a super-block of 16 rows in packQ6_K's layout.
const packedQ6_K = 3392

// putF32 stores f at b[0:4], little-endian.
func putF32(b []byte, f float32) { putLE32(b, math.Float32bits(f)) }

// putLE32 stores u at b[0:4], little-endian.
func putLE32(b []byte, u uint32) {
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}
