package weights

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// conformance is testdata/conformance.json, written by PyTorch.
type conformance struct {
	Tensors map[string]struct {
		DType   string  `json:"dtype"`
		Shape   []int   `json:"shape"`
		F32Bits []int64 `json:"f32_bits"`
		Ints    []int64 `json:"ints"`
	} `json:"tensors"`
	Convert struct {
		F32Bits  []int64 `json:"f32_bits"`
		BF16Bits []int64 `json:"bf16_bits"`
		F16Bits  []int64 `json:"f16_bits"`
	} `json:"convert"`
}

// checkConformance reads dir/conformance.safetensors with this package and
// compares every value with what PyTorch recorded in dir/conformance.json.
func checkConformance(t *testing.T, dir string) {
	raw, err := os.ReadFile(filepath.Join(dir, "conformance.json"))
	require.NoError(t, err)
	var want conformance
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NotEmpty(t, want.Tensors)

	f, err := OpenFile(filepath.Join(dir, "conformance.safetensors"))
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Close()) }()
	assert.Equal(t, "pt", f.Metadata()["format"])
	assert.Len(t, f.Names(), len(want.Tensors))
	for name, w := range want.Tensors {
		tt, err := f.Tensor(name)
		require.NoError(t, err, name)
		assert.Equal(t, w.DType, tt.DType.String(), name)
		assert.Equal(t, w.Shape, tt.Shape, name)
		if !tt.DType.IsFloat() {
			ints, err := tt.Int64s()
			require.NoError(t, err, name)
			require.NotEmpty(t, w.Ints, name)
			assert.Equal(t, w.Ints, ints, name)
			continue
		}
		vals, err := tt.F32()
		require.NoError(t, err, name)
		require.Len(t, vals, len(w.F32Bits), name)
		for i, v := range vals {
			exp := math.Float32frombits(uint32(w.F32Bits[i]))
			if math.IsNaN(float64(exp)) {
				assert.True(t, math.IsNaN(float64(v)), "%s[%d]: want NaN, got %v", name, i, v)
				continue
			}
			require.Equal(t, math.Float32bits(exp), math.Float32bits(v), "%s[%d]: want %v, got %v", name, i, exp, v)
		}
	}

	// Rounding F32 to BF16 and F16 must match torch's .to(dtype) bit for bit.
	c := want.Convert
	require.Len(t, c.BF16Bits, len(c.F32Bits))
	require.Len(t, c.F16Bits, len(c.F32Bits))
	for i, b := range c.F32Bits {
		src := math.Float32frombits(uint32(b))
		gotBF, wantBF := kernels.F32ToBF16(src), uint16(c.BF16Bits[i])
		gotH, wantH := F32ToF16(src), uint16(c.F16Bits[i])
		if math.IsNaN(float64(src)) {
			assert.True(t, math.IsNaN(float64(kernels.BF16ToF32(gotBF))), "bf16 of NaN")
			assert.True(t, math.IsNaN(float64(F16ToF32(gotH))), "f16 of NaN")
			continue
		}
		require.Equal(t, wantBF, gotBF, "bf16(%v = %#08x)", src, uint32(b))
		require.Equal(t, wantH, gotH, "f16(%v = %#08x)", src, uint32(b))
	}
}

// TestTorchConformanceFixture checks the committed PyTorch-made fixture, so
// the comparison runs on machines without torch.
func TestTorchConformanceFixture(t *testing.T) {
	checkConformance(t, "testdata")
}

// TestTorchConformanceLive regenerates the fixture with the local PyTorch
// (Debian's /usr/bin/python3) when it is importable.
func TestTorchConformanceLive(t *testing.T) {
	const py = "/usr/bin/python3"
	if testing.Short() {
		t.Skip("short mode")
	}
	if _, err := os.Stat(py); err != nil {
		oracle.Missing(t, "no %s: %v", py, err)
	}
	dir := t.TempDir()
	goDir := writeForPython(t)
	cmd := exec.Command(py, "testdata/make_conformance.py", dir, goDir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "No module named 'torch'") {
		oracle.Missing(t, "%s cannot import torch (apt-get install python3-torch)", py)
	}
	require.NoError(t, err, "%s", out)
	t.Logf("torch wrote the fixture and read ours in %v: %s", time.Since(start), strings.TrimSpace(string(out)))
	assert.Contains(t, string(out), "verified 6 Go-written tensors")
	checkConformance(t, dir)
}

// writeForPython writes a sharded checkpoint of every dtype (odd sizes
// included) with expected.json holding the float32 bits this package reads
// back, for the Python side to check independently.
func writeForPython(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := []float32{0, 1, -1.5, 3.140625, 65504, 1e-3, float32(math.Inf(-1)), 1.0 + 1.0/256, 2.5e-8}
	tensors := []Tensor{
		mustTensor(t, "model.embed_tokens.weight", BF16, []int{3, 3}, src),
		mustTensor(t, "odd.bf16", BF16, []int{1}, src[2:3]),
		mustTensor(t, "model.norm.weight", F32, []int{9}, src),
		mustTensor(t, "half", F16, []int{3, 1, 3}, src),
		mustTensor(t, "scalar", F32, nil, src[3:4]),
		mustTensor(t, "empty", F16, []int{2, 0}, nil),
	}
	require.NoError(t, WriteCheckpoint(dir, tinyConfig(), tensors, 40, map[string]string{"format": "pt"}))
	expected := map[string]any{}
	for _, tt := range tensors {
		vals, err := tt.F32()
		require.NoError(t, err)
		bits := make([]uint32, len(vals))
		for i, v := range vals {
			bits[i] = math.Float32bits(v)
		}
		shape := tt.Shape
		if shape == nil {
			shape = []int{}
		}
		expected[tt.Name] = map[string]any{"shape": shape, "f32_bits": bits}
	}
	data, err := json.Marshal(expected)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "expected.json"), data, 0o644))
	return dir
}
