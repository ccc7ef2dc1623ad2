package kernels

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// ggmlQuantize is a Python script that loads llama.cpp's ggml libraries
// with ctypes and runs, on float32 rows read from a file, either
// ggml_quantize_chunk (the reference quantizers llama-quantize runs
// without an importance matrix) or the CPU backend's from_float for a
// type (how the CPU backend quantizes activations: quantize_row_q8_0 for
// Q8_0, quantize_row_q8_K for Q8_K), writing the bytes to another file.
const ggmlQuantize = `
import ctypes, sys
lib, mode, typ, rows, cols, src, dst = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
base = ctypes.CDLL(lib + "/libggml-base.so")
data = open(src, "rb").read()
x = (ctypes.c_float * (rows * cols)).from_buffer_copy(data)
base.ggml_row_size.restype = ctypes.c_size_t
base.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
rb = base.ggml_row_size(typ, cols)
out = (ctypes.c_char * (rb * rows))()
if mode == "quantize":
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    n = base.ggml_quantize_chunk(typ, ctypes.addressof(x), ctypes.addressof(out), 0, rows, cols, None)
    assert n == rb * rows, (n, rb, rows)
else:
    cpu = ctypes.CDLL(lib + "/libggml-cpu.so")
    FROM = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    class Traits(ctypes.Structure):
        _fields_ = [("from_float", FROM), ("vec_dot", ctypes.c_void_p), ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]
    cpu.ggml_cpu_init()
    cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(Traits)
    t = cpu.ggml_get_type_traits_cpu(typ).contents
    for r in range(rows):
        t.from_float(ctypes.addressof(x) + 4 * r * cols, ctypes.addressof(out) + r * rb, cols)
open(dst, "wb").write(bytes(out))
`

// ggmlTypeID is the ggml_type of each quantized DType (and of Q8_K, 15).
var ggmlTypeID = map[DType]int{Q4_0: 2, Q5_0: 6, Q8_0: 8, Q4_K: 12, Q6_K: 14}

// runGGML runs ggmlQuantize on rows × cols values and returns its bytes.
func runGGML(t *testing.T, lib, mode string, typ, rows, cols int, x []float32) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "x.f32"), filepath.Join(dir, "q.bin")
	buf := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	if err := os.WriteFile(in, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", ggmlQuantize, lib, mode, strconv.Itoa(typ), strconv.Itoa(rows), strconv.Itoa(cols), in, out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("llama.cpp's ggml (%s, type %d): %v\n%s", mode, typ, err, msg)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// quantTestRows returns rows × cols values of the kinds that exercise the
// quantizers' choices: normal weights of several scales, heavy tails,
// rows with one outlier, all-positive and all-negative blocks, zeros, and
// values on the grids (where ties and exact fits happen).
func quantTestRows(rows, cols int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 7))
	x := make([]float32, rows*cols)
	for i := range rows {
		row := x[i*cols : (i+1)*cols]
		switch i % 8 {
		case 0, 1:
			for j := range row {
				row[j] = float32(r.NormFloat64() * 0.02)
			}
		case 2:
			for j := range row {
				row[j] = float32(r.NormFloat64() * r.ExpFloat64())
			}
		case 3:
			for j := range row {
				row[j] = float32(r.NormFloat64() * 1e-3)
			}
			row[r.IntN(cols)] = 0.5
		case 4:
			for j := range row {
				row[j] = float32(r.Float64())
			}
		case 5:
			for j := range row {
				row[j] = -float32(r.Float64() * 3)
			}
		case 6:
			for j := range row {
				row[j] = float32(r.IntN(31)-15) / 4
			}
		case 7:
			// zero blocks of 32 and 256 between normal ones
			for j := range row {
				if j/32%3 != 1 && j/256%2 == 0 {
					row[j] = float32(r.NormFloat64())
				}
			}
		}
	}
	return x
}

// TestQuantizeMatchesLlamaCpp: every quantized type's QuantizeRow is byte
// for byte llama.cpp's ggml_quantize_chunk (what llama-quantize writes
// without an importance matrix) on rows of many kinds, and the activation
// quantizers give the bytes of llama.cpp's CPU backend (quantize_row_q8_0,
// x86; quantize_row_q8_K). Needs a llama.cpp build (oracle.LlamaCppDir).
func TestQuantizeMatchesLlamaCpp(t *testing.T) {
	lib := oracle.LlamaCppDir(t, "libggml-base.so", "libggml-cpu.so")
	if _, err := exec.LookPath("python3"); err != nil {
		oracle.Missing(t, "python3 runs llama.cpp's quantizers through ctypes: %v", err)
	}
	const rows, cols = 64, 1024
	x := quantTestRows(rows, cols, 1)
	for _, dt := range []DType{Q8_0, Q4_0, Q5_0, Q4_K, Q6_K} {
		want := runGGML(t, lib, "quantize", ggmlTypeID[dt], rows, cols, x)
		got := make([]byte, dt.Bytes(rows, cols))
		if err := QuantizeRow(dt, got, x); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			bb := dt.BlockBytes()
			for b := 0; b < len(got)/bb; b++ {
				if !bytes.Equal(got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb]) {
					t.Fatalf("%v: block %d (row %d) differs from llama.cpp's:\n got %x\nwant %x", dt, b, b*dt.BlockLen()/cols, got[b*bb:(b+1)*bb], want[b*bb:(b+1)*bb])
				}
			}
		}
	}
	// Activations: Q8_0 (32 per block: d as F16, 32 quants) and Q8_K (d
	// float32, 256 quants, 16 int16 sums).
	want := runGGML(t, lib, "act", 8, rows, cols, x)
	for i := range rows {
		a := &qact{q: make([]int8, cols), d: make([]float32, cols/32), s: make([]float32, cols/32)}
		quantizeActQ8_0(a, x[i*cols:(i+1)*cols], 1, cols, 0, 1, i%2 == 1) // Go and assembly
		for b := range cols / 32 {
			w := want[(i*cols/32+b)*34:]
			if d := F16ToF32(le16(w)); math.Float32bits(d) != math.Float32bits(a.d[b]) {
				t.Fatalf("Q8_0 activations, row %d block %d: scale %v, llama.cpp %v", i, b, a.d[b], d)
			}
			for j := range 32 {
				if int8(w[2+j]) != a.q[b*32+j] {
					t.Fatalf("Q8_0 activations, row %d block %d: quant %d is %d, llama.cpp %d", i, b, j, a.q[b*32+j], int8(w[2+j]))
				}
			}
		}
	}
	want = runGGML(t, lib, "act", 15, rows, cols, x)
	const q8kBytes = 4 + 256 + 32
	for i := range rows {
		a := &qact{q: make([]int8, cols), d: make([]float32, cols/256), bs: make([]int16, cols/16)}
		quantizeActQ8K(a, x[i*cols:(i+1)*cols], 1, cols, 0, 1, i%2 == 1) // Go and assembly
		for b := range cols / 256 {
			w := want[(i*cols/256+b)*q8kBytes:]
			if d := math.Float32frombits(le32(w)); math.Float32bits(d) != math.Float32bits(a.d[b]) {
				t.Fatalf("Q8_K activations, row %d block %d: scale %v, llama.cpp %v", i, b, a.d[b], d)
			}
			for j := range 256 {
				if int8(w[4+j]) != a.q[b*256+j] {
					t.Fatalf("Q8_K activations, row %d block %d: quant %d is %d, llama.cpp %d", i, b, j, a.q[b*256+j], int8(w[4+j]))
				}
			}
			for j := range 16 {
				if int16(le16(w[260+2*j:])) != a.bs[b*16+j] {
					t.Fatalf("Q8_K activations, row %d block %d: sum %d is %d, llama.cpp %d", i, b, j, a.bs[b*16+j], int16(le16(w[260+2*j:])))
				}
			}
		}
	}
}
