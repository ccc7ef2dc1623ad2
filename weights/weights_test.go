package weights

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// tinyConfig is a valid small LLaMA config used across the tests.
func tinyConfig() *Config {
	bos, eos := 1, 2
	return &Config{
		Architectures:         []string{"LlamaForCausalLM"},
		ModelType:             "llama",
		HiddenSize:            16,
		IntermediateSize:      32,
		NumHiddenLayers:       2,
		NumAttentionHeads:     4,
		NumKeyValueHeads:      2,
		HeadDim:               4,
		VocabSize:             50,
		MaxPositionEmbeddings: 64,
		RMSNormEps:            1e-5,
		RopeTheta:             10000,
		LayerTypes:            []string{FullAttention, FullAttention},
		BOSTokenID:            &bos,
		EOSTokenIDs:           []int{eos},
		TorchDType:            "float32",
	}
}

func randomValues(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func mustTensor(t testing.TB, name string, dt DType, shape []int, vals []float32) Tensor {
	t.Helper()
	tt, err := NewTensor(name, dt, shape, vals)
	require.NoError(t, err)
	return tt
}

func TestRoundTripAllDTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	src := randomValues(r, 6*5)
	src[0], src[1], src[2] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1))
	var tensors []Tensor
	for _, dt := range []DType{F32, F16, BF16} {
		tensors = append(tensors, mustTensor(t, "w."+dt.String(), dt, []int{6, 5}, src))
	}
	tensors = append(tensors, mustTensor(t, "scalar", F32, nil, []float32{3.5}))
	tensors = append(tensors, mustTensor(t, "empty", BF16, []int{0, 7}, nil))
	var buf bytes.Buffer
	require.NoError(t, WriteSafetensors(&buf, tensors, map[string]string{"format": "pt"}))

	f, err := ParseSafetensors("mem", buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"format": "pt"}, f.Metadata())
	assert.Equal(t, []string{"empty", "scalar", "w.BF16", "w.F16", "w.F32"}, f.Names())

	got, err := f.Tensor("w.F32")
	require.NoError(t, err)
	assert.Equal(t, F32, got.DType)
	assert.Equal(t, []int{6, 5}, got.Shape)
	vals, err := got.F32()
	require.NoError(t, err)
	assert.Equal(t, src, vals)

	bf, err := f.Tensor("w.BF16")
	require.NoError(t, err)
	bits, err := bf.BF16()
	require.NoError(t, err)
	wide, err := bf.F32()
	require.NoError(t, err)
	for i, v := range src {
		assert.Equal(t, kernels.F32ToBF16(v), bits[i])
		assert.Equal(t, kernels.BF16ToF32(bits[i]), wide[i])
		if !math.IsInf(float64(v), 0) {
			assert.InDelta(t, v, wide[i], math.Abs(float64(v))/128, "element %d", i)
		}
	}
	h, err := f.Tensor("w.F16")
	require.NoError(t, err)
	hw, err := h.F32()
	require.NoError(t, err)
	for i, v := range src {
		assert.Equal(t, F16ToF32(F32ToF16(v)), hw[i])
	}
	s, err := f.Tensor("scalar")
	require.NoError(t, err)
	assert.Empty(t, s.Shape)
	sv, err := s.F32()
	require.NoError(t, err)
	assert.Equal(t, []float32{3.5}, sv)
	e, err := f.Tensor("empty")
	require.NoError(t, err)
	ev, err := e.F32()
	require.NoError(t, err)
	assert.Empty(t, ev)
}

func TestCheckpointSingleAndSharded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var tensors []Tensor
	for i := 0; i < 5; i++ {
		tensors = append(tensors, mustTensor(t, "layer."+string(rune('a'+i)), BF16, []int{8, 16}, randomValues(r, 128)))
	}
	for _, tc := range []struct {
		name      string
		maxShard  int64
		wantFiles int
	}{{"single", 0, 1}, {"sharded", 600, 3}, {"one per shard", 1, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, WriteCheckpoint(dir, tinyConfig(), tensors, tc.maxShard, nil))
			matches, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
			require.NoError(t, err)
			assert.Len(t, matches, tc.wantFiles)
			ck, err := Open(dir)
			require.NoError(t, err)
			defer func() { require.NoError(t, ck.Close()) }()
			assert.Equal(t, tinyConfig(), ck.Config)
			assert.Len(t, ck.Names(), 5)
			for _, want := range tensors {
				got, err := ck.Require(want.Name, 8, 16)
				require.NoError(t, err)
				assert.Equal(t, want.Data, got.Data)
			}
			_, err = ck.Require("layer.a", 16, 8)
			assert.ErrorContains(t, err, `tensor "layer.a" has shape [8 16], want [16 8]`)
			_, err = ck.Require("nope", 1)
			assert.ErrorContains(t, err, `missing tensor "nope"`)
		})
	}
}

func TestZeroCopyFromMapping(t *testing.T) {
	dir := t.TempDir()
	vals := []float32{1, 2, 3, 4}
	require.NoError(t, WriteCheckpoint(dir, nil, []Tensor{
		mustTensor(t, "a", F32, []int{4}, vals),
		mustTensor(t, "b", BF16, []int{2, 2}, vals),
	}, 0, nil))
	ck, err := OpenTensors(dir)
	require.NoError(t, err)
	defer ck.Close()
	a, err := ck.Tensor("a")
	require.NoError(t, err)
	av, err := a.F32()
	require.NoError(t, err)
	assert.Equal(t, vals, av)
	assert.Same(t, &a.Data[0], (*byte)(unsafePointer(&av[0])), "F32 view should alias the mapping")
	b, err := ck.Tensor("b")
	require.NoError(t, err)
	bv, err := b.BF16()
	require.NoError(t, err)
	assert.Same(t, &b.Data[0], (*byte)(unsafePointer(&bv[0])), "BF16 view should alias the mapping")
	require.NoError(t, ck.Close())
	_, err = ck.Tensor("a")
	assert.ErrorContains(t, err, "closed")
	require.NoError(t, ck.Close(), "second Close is a no-op")
}

func TestOpenMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	assert.ErrorContains(t, err, "config.json")
	require.NoError(t, WriteConfig(dir, tinyConfig()))
	_, err = Open(dir)
	assert.ErrorContains(t, err, "neither model.safetensors nor model.safetensors.index.json")
	require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFileName), []byte(`{"weight_map":{"x":"model-1.safetensors"}}`), 0o644))
	_, err = Open(dir)
	assert.ErrorContains(t, err, "model-1.safetensors")
}

func TestWriterAlignsMixedDTypes(t *testing.T) {
	// An odd-length BF16 tensor first would leave the F32 after it
	// unaligned; the writer puts wider dtypes first instead.
	tensors := []Tensor{
		mustTensor(t, "odd", BF16, []int{3}, []float32{1, 2, 3}),
		mustTensor(t, "half", F16, []int{1}, []float32{4}),
		mustTensor(t, "wide", F32, []int{2}, []float32{5, 6}),
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, WriteSafetensorsFile(path, tensors, nil))
	f, err := OpenFile(path)
	require.NoError(t, err)
	defer f.Close()
	for _, want := range tensors {
		got, err := f.Tensor(want.Name)
		require.NoError(t, err)
		assert.Zero(t, uintptr(unsafePointer(&got.Data[0]))%uintptr(got.DType.Size()), "%s aligned", want.Name)
		assert.Equal(t, want.Data, got.Data)
	}
	w, err := f.Tensor("wide")
	require.NoError(t, err)
	v, err := w.F32()
	require.NoError(t, err)
	assert.Same(t, &w.Data[0], (*byte)(unsafePointer(&v[0])))
}

func TestWriteCheckpointReplacesOtherLayout(t *testing.T) {
	dir := t.TempDir()
	a := mustTensor(t, "a", F32, []int{4}, []float32{1, 2, 3, 4})
	b := mustTensor(t, "b", F32, []int{4}, []float32{5, 6, 7, 8})
	require.NoError(t, WriteCheckpoint(dir, nil, []Tensor{a}, 0, nil))
	require.NoError(t, WriteCheckpoint(dir, nil, []Tensor{a, b}, 16, nil))
	assert.NoFileExists(t, filepath.Join(dir, SingleFileName))
	ck, err := OpenTensors(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, ck.Names())
	require.NoError(t, ck.Close())
	require.NoError(t, WriteCheckpoint(dir, nil, []Tensor{b}, 0, nil))
	assert.NoFileExists(t, filepath.Join(dir, IndexFileName))
	ck, err = OpenTensors(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, ck.Names())
	require.NoError(t, ck.Close())

	bad := tinyConfig()
	bad.HiddenSize = 0
	empty := t.TempDir()
	assert.ErrorContains(t, WriteCheckpoint(empty, bad, []Tensor{a}, 0, nil), "hidden_size is 0")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing written when validation fails")
}

func TestUnused(t *testing.T) {
	dir := t.TempDir()
	var tensors []Tensor
	for _, n := range []string{"a", "b", "c"} {
		tensors = append(tensors, mustTensor(t, n, F32, []int{1}, []float32{1}))
	}
	require.NoError(t, WriteCheckpoint(dir, nil, tensors, 0, nil))
	ck, err := OpenTensors(dir)
	require.NoError(t, err)
	defer ck.Close()
	assert.Equal(t, []string{"a", "b", "c"}, ck.Unused())
	_, err = ck.Tensor("b")
	require.NoError(t, err)
	_, err = ck.Require("c", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, ck.Unused())
	_, err = ck.Require("a", 2)
	require.Error(t, err)
	assert.Empty(t, ck.Unused(), "a Require with the wrong shape still counts as looked at")
}

func TestIntegerTensors(t *testing.T) {
	ids := []int64{0, 1, -1, 128255, 1 << 40}
	i64, err := NewIntTensor("tokens", I64, []int{5}, ids)
	require.NoError(t, err)
	i32, err := NewIntTensor("small", I32, []int{2, 2}, ids[:4])
	require.NoError(t, err)
	_, err = NewIntTensor("small", I32, []int{5}, ids)
	assert.ErrorContains(t, err, "value 1099511627776 at 4 does not fit I32")
	_, err = NewIntTensor("x", F32, []int{1}, ids[:1])
	assert.ErrorContains(t, err, "not an integer dtype")
	_, err = NewTensor("x", I64, []int{1}, []float32{1})
	assert.ErrorContains(t, err, "not a floating-point dtype")

	half := mustTensor(t, "h", BF16, []int{1}, []float32{1})
	var buf bytes.Buffer
	require.NoError(t, WriteSafetensors(&buf, []Tensor{half, i32, i64}, nil))
	f, err := ParseSafetensors("ints", buf.Bytes())
	require.NoError(t, err)
	got, err := f.Tensor("tokens")
	require.NoError(t, err)
	assert.Equal(t, I64, got.DType)
	v, err := got.Int64s()
	require.NoError(t, err)
	assert.Equal(t, ids, v)
	got, err = f.Tensor("small")
	require.NoError(t, err)
	v, err = got.Int64s()
	require.NoError(t, err)
	assert.Equal(t, ids[:4], v)
	_, err = got.F32()
	assert.ErrorContains(t, err, `tensor "small" is I32, not floating point`)
	_, err = got.BF16()
	assert.ErrorContains(t, err, "not floating point")
	h, err := f.Tensor("h")
	require.NoError(t, err)
	_, err = h.Int64s()
	assert.ErrorContains(t, err, `tensor "h" is BF16, not an integer type`)
}

// TestCheckFinite: the first NaN or infinite element is found in every
// float dtype, at any position (word-aligned or in the tail, at any byte
// offset), against math.IsNaN/IsInf of the widened values; finite extremes
// (largest, subnormal, -0) pass, and integer tensors always do.
func TestCheckFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 17))
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, dt := range []DType{F32, BF16, F16} {
		for n := 1; n <= 21; n++ {
			for trial := range 8 {
				vals := make([]float32, n)
				for i := range vals {
					vals[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-40, -65504, 65504, 1e-7, float32(r.NormFloat64())}[r.IntN(7)]
				}
				if dt == F32 && trial == 0 {
					vals[r.IntN(n)] = math.MaxFloat32
				}
				want := -1
				if trial > 0 {
					want = r.IntN(n)
					vals[want] = bad[r.IntN(len(bad))]
					if r.IntN(2) == 0 && want+1 < n {
						vals[want+1+r.IntN(n-want-1)] = bad[r.IntN(len(bad))] // a later one too
					}
				}
				tn, err := NewTensor("w", dt, []int{n}, vals)
				require.NoError(t, err)
				// The reference: the widened values.
				f, err := tn.F32()
				require.NoError(t, err)
				ref := -1
				for i, v := range f {
					if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
						ref = i
						break
					}
				}
				require.Equal(t, want, ref, "the test's own values (%s)", dt)
				// Misaligned data: the check reads bytes, not aligned words.
				shifted := append(make([]byte, 1+r.IntN(7)), tn.Data...)
				for _, data := range [][]byte{tn.Data, shifted[len(shifted)-len(tn.Data):]} {
					tn.Data = data
					err := tn.CheckFinite()
					if ref < 0 {
						require.NoError(t, err, "%s %v", dt, vals)
						continue
					}
					require.Error(t, err, "%s %v", dt, vals)
					require.Contains(t, err.Error(), fmt.Sprintf(`tensor "w" holds a non-finite weight: element %d of [%d] is`, ref, n))
				}
			}
		}
	}
	ints, err := NewIntTensor("ids", I32, []int{3}, []int64{-1, 0x7f800000, 0x7fc00000})
	require.NoError(t, err)
	require.NoError(t, ints.CheckFinite())
}

// TestCheckFiniteChunked: tensors larger than one chunk, checked by several
// goroutines, report each bad tensor's first bad element, in order.
func TestCheckFiniteChunked(t *testing.T) {
	n := (2*finiteChunk + finiteChunk/2) / 2 // BF16 elements over three chunks
	a := &Tensor{Name: "a", DType: BF16, Shape: []int{n}, Data: make([]byte, 2*n)}
	b := &Tensor{Name: "b", DType: F32, Shape: []int{n / 2}, Data: make([]byte, 2*n)}
	c := &Tensor{Name: "c", DType: BF16, Shape: []int{n}, Data: make([]byte, 2*n)}
	nan, inf := kernels.F32ToBF16(float32(math.NaN())), kernels.F32ToBF16(float32(math.Inf(1)))
	late, early := n-3, finiteChunk/2+5 // in the third chunk, in the second
	a.Data[2*late], a.Data[2*late+1] = byte(nan), byte(nan>>8)
	a.Data[2*early], a.Data[2*early+1] = byte(inf), byte(inf>>8)
	copy(c.Data[2*(n-1):], []byte{byte(nan), byte(nan >> 8)})
	require.NoError(t, CheckFinite(context.Background(), 4, b))
	err := CheckFinite(context.Background(), 4, a, b, c)
	require.Error(t, err)
	require.Equal(t, fmt.Sprintf("tensor \"a\" holds a non-finite weight: element %d of [%d] is +Inf\n"+
		"tensor \"c\" holds a non-finite weight: element %d of [%d] is NaN", early, n, n-1, n), err.Error())

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, CheckFinite(ctx, 2, a, b, c), context.Canceled)
}
