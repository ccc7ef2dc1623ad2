package weights

import (
	"fmt"
	"testing"
)

// writeLargeCheckpoint writes a checkpoint of about totalMB MiB of BF16
// data in 4 MiB tensors (all sharing one backing buffer to spare memory),
// sharded at 100 MiB, and returns its directory and tensor names.
func writeLargeCheckpoint(b *testing.B, totalMB int) (string, []string) {
	b.Helper()
	const rows, cols = 1024, 2048 // 4 MiB of BF16
	data := make([]byte, rows*cols*2)
	for i := range data {
		data[i] = byte(i * 7)
	}
	var tensors []Tensor
	var names []string
	for i := 0; i < totalMB/4; i++ {
		name := fmt.Sprintf("model.layers.%d.mlp.up_proj.weight", i)
		tensors = append(tensors, Tensor{Name: name, DType: BF16, Shape: []int{rows, cols}, Data: data})
		names = append(names, name)
	}
	dir := b.TempDir()
	if err := WriteCheckpoint(dir, tinyConfig(), tensors, 100<<20, nil); err != nil {
		b.Fatal(err)
	}
	return dir, names
}

// BenchmarkOpen200MB opens a 200 MiB sharded checkpoint, checks every
// tensor's shape and takes its zero-copy BF16 view, then closes it. With
// mmap this costs only the header parse, not a read of the data.
func BenchmarkOpen200MB(b *testing.B) {
	dir, names := writeLargeCheckpoint(b, 200)
	b.ResetTimer()
	for b.Loop() {
		ck, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range names {
			t, err := ck.Require(n, 1024, 2048)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := t.BF16(); err != nil {
				b.Fatal(err)
			}
		}
		if err := ck.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBF16ToF32 measures widening a 4 MiB BF16 tensor (the
// non-zero-copy path a float32 engine takes).
func BenchmarkBF16ToF32(b *testing.B) {
	t := Tensor{Name: "w", DType: BF16, Shape: []int{1024, 2048}, Data: make([]byte, 1024*2048*2)}
	b.SetBytes(int64(len(t.Data)))
	for b.Loop() {
		if _, err := t.F32(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkF16ToF32 measures widening a 4 MiB F16 tensor.
func BenchmarkF16ToF32(b *testing.B) {
	t := Tensor{Name: "w", DType: F16, Shape: []int{1024, 2048}, Data: make([]byte, 1024*2048*2)}
	for i := range t.Data {
		t.Data[i] = byte(i * 13)
	}
	b.SetBytes(int64(len(t.Data)))
	for b.Loop() {
		if _, err := t.F32(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckFinite scans 64 MiB of finite weights for NaN and Inf, as
// model loading does once per tensor (bytes/s is the scan rate).
func BenchmarkCheckFinite(b *testing.B) {
	for _, dt := range []DType{BF16, F32} {
		b.Run(dt.String(), func(b *testing.B) {
			data := make([]byte, 64<<20)
			for i := range data {
				data[i] = byte(i * 7 % 61) // small exponents: finite
			}
			t := Tensor{Name: "w", DType: dt, Shape: []int{len(data) / dt.Size()}, Data: data}
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := t.CheckFinite(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
