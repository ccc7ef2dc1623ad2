package kernels

import "testing"

// TestAdviseHugePagesKeepsContents checks that the advice neither fails on
// empty, small and unaligned slices nor changes what they hold.
func TestAdviseHugePagesKeepsContents(t *testing.T) {
	AdviseHugePages([]float32(nil))
	AdviseHugePages(make([]uint16, 3))
	big := make([]float32, 3<<20) // 12 MiB: at least four whole huge pages
	for i := range big {
		big[i] = float32(i)
	}
	AdviseHugePages(big[1:])
	for i, v := range big {
		if v != float32(i) {
			t.Fatalf("big[%d] = %v after the advice, want %v", i, v, float32(i))
		}
	}
	fresh := make([]uint16, 5<<20)
	AdviseHugePages(fresh)
	for i := range fresh {
		fresh[i] = uint16(i)
	}
	for i, v := range fresh {
		if v != uint16(i) {
			t.Fatalf("fresh[%d] = %v, want %v", i, v, uint16(i))
		}
	}
}
