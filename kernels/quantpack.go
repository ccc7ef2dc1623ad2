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
// rows (llama.cpp repacks its Q8_0 weights likewise on this CPU). A matrix's
// last Rows mod 16 rows stay on the row kernels. The packed copy takes
// 576/544 of the weights' memory; call PackQ8_0 before the matrix is
// shared (it sets an unexported field).
func PackQ8_0(m *Mat) {
	if m == nil || !hasPackedQ8_0() {
		return
	}
	if m.Parts != nil {
		for _, p := range m.Parts {
			PackQ8_0(p)
		}
		return
	}
	if m.DType != Q8_0 || m.Check() != nil || m.Rows < 16 || m.pk != nil {
		return
	}
	nb := m.Cols / qk0
	groups := m.Rows / 16
	rb := nb * bytesQ8_0
	pk := make([]byte, groups*nb*576)
	AdviseHugePages(pk)
	for g := range groups {
		for b := range nb {
			out := pk[(g*nb+b)*576 : (g*nb+b+1)*576]
			for r := range 16 {
				blk := m.Q[(g*16+r)*rb+b*bytesQ8_0:]
				for k := range 8 {
					for j := range 4 {
						out[k*64+r*4+j] = blk[2+4*k+j] + 128
					}
				}
				d := F16ToF32(le16(blk))
				bits := math.Float32bits(d)
				out[512+4*r], out[513+4*r], out[514+4*r], out[515+4*r] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
			}
		}
	}
	m.pk = pk
}
