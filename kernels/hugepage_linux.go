package kernels

import (
	"syscall"
	"unsafe"
)

// hugePageBytes is the size of a transparent huge page on amd64 and arm64
// Linux.
const hugePageBytes = 2 << 20

// AdviseHugePages asks the kernel to back the whole 2 MiB pages inside s
// with transparent huge pages (madvise MADV_HUGEPAGE). Where transparent
// huge pages are enabled only on request (/sys/kernel/mm/transparent_hugepage/enabled
// = madvise, the default of many distributions) a weight matrix on the Go
// heap otherwise sits in scattered 4 KiB pages, and a matrix-vector product,
// which streams every weight once per token, takes a TLB miss every 4 KiB
// of every weight stream; llama.cpp's weights, mapped from the page cache,
// come partly in huge or contiguous large folios. Call it on fresh memory
// before writing to it, so that its pages are faulted in as huge pages. It
// is a hint: errors (THP disabled, an old kernel) are ignored, and memory
// smaller than a huge page is left as it is.
func AdviseHugePages[T any](s []T) {
	if len(s) == 0 {
		return
	}
	size := uintptr(len(s)) * unsafe.Sizeof(s[0])
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	lo := (start + hugePageBytes - 1) &^ (hugePageBytes - 1)
	hi := (start + size) &^ (hugePageBytes - 1)
	if hi <= lo {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, lo-start)), hi-lo)
	_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
}
