package weights

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
)

// ggufTestConfig is a small LLaMA config with GQA, rows of whole K-quant
// blocks, llama3 RoPE scaling and a sliding layer (every key WriteLlamaGGUF
// writes).
func ggufTestConfig() *Config {
	bos := 1
	return &Config{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama", HiddenAct: "silu",
		HiddenSize: 256, IntermediateSize: 512, NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2,
		HeadDim: 64, VocabSize: 96, MaxPositionEmbeddings: 512, RMSNormEps: 1e-5, RopeTheta: 500000,
		RopeScaling:   &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 128},
		SlidingWindow: 64, LayerTypes: []string{FullAttention, SlidingAttention}, BOSTokenID: &bos, EOSTokenIDs: []int{2}}
}

// quantTensor quantizes a HF-layout F32 tensor to dt (F32, BF16 and F16
// converted).
func quantTensor(t *testing.T, src Tensor, dt DType) *Tensor {
	t.Helper()
	vals, err := src.F32()
	require.NoError(t, err)
	if !dt.Quantized() {
		out, err := NewTensor(src.Name, dt, src.Shape, vals)
		require.NoError(t, err)
		return &out
	}
	k, _ := dt.Kernels()
	q := make([]byte, k.RowBytes(len(vals)))
	require.NoError(t, kernels.QuantizeRow(k, q, vals))
	return &Tensor{Name: src.Name, DType: dt, Shape: slices.Clone(src.Shape), Data: q}
}

// writeTestGGUF writes cfg's random model to a GGUF file, matrices in the
// dtypes of dtOf (norms F32), and returns the path and the HF tensors
// written.
func writeTestGGUF(t *testing.T, cfg *Config, dtOf func(name string) DType, extra []GGUFKV) (string, map[string]*Tensor) {
	t.Helper()
	src, err := RandomLlama(cfg, F32, 3)
	require.NoError(t, err)
	var infos []GGUFTensorInfo
	hf := map[string]*Tensor{}
	var list []*Tensor
	for _, s := range src {
		dt := F32
		if len(s.Shape) == 2 {
			dt = dtOf(s.Name)
		}
		q := quantTensor(t, s, dt)
		hf[s.Name] = q
		list = append(list, q)
		infos = append(infos, GGUFTensorInfo{Name: s.Name, DType: dt, Shape: s.Shape})
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, WriteLlamaGGUF(f, cfg, "test", GGUFFileQ4_KM, extra, infos, func(i int) (*Tensor, error) { return list[i], nil }))
	require.NoError(t, f.Close())
	return path, hf
}

// mixedDTypes gives each projection another dtype: every type GGUF files
// of ndbg hold.
func mixedDTypes(name string) DType {
	switch {
	case strings.HasSuffix(name, QProj):
		return Q4_K
	case strings.HasSuffix(name, KProj):
		return Q8_0
	case strings.HasSuffix(name, VProj):
		return Q6_K
	case strings.HasSuffix(name, OProj):
		return Q4_0
	case strings.HasSuffix(name, GateProj):
		return Q5_0
	case strings.HasSuffix(name, UpProj):
		return BF16
	case strings.HasSuffix(name, DownProj):
		return F16
	}
	return F32
}

// TestGGUFRoundTrip: a model written by WriteLlamaGGUF opens as a
// Checkpoint with the same config (floats as float32), every tensor by its
// Hugging Face name with the same bytes (q and k un-permuted back), the
// rope_freqs tensor checked and not reported as a tensor, and the extra
// metadata readable.
func TestGGUFRoundTrip(t *testing.T) {
	cfg := ggufTestConfig()
	path, hf := writeTestGGUF(t, cfg, mixedDTypes, []GGUFKV{{"tokenizer.ggml.model", GGUFString("gpt2")},
		{"tokenizer.ggml.tokens", GGUFStrings([]string{"a", "b"})}, {"test.ints", GGUFInt32s([]int32{-1, 5})}, {"test.flag", GGUFBool(true)}})
	ck, err := Open(path)
	require.NoError(t, err)
	defer ck.Close()
	want := *cfg
	want.RMSNormEps = float64(float32(cfg.RMSNormEps))
	want.VocabSize = cfg.VocabSize
	require.Equal(t, &want, ck.Config)
	require.ElementsMatch(t, slices.Collect(func(yield func(string) bool) {
		for n := range hf {
			if !yield(n) {
				return
			}
		}
	}), ck.Names())
	for name, w := range hf {
		got, err := ck.Tensor(name)
		require.NoError(t, err, name)
		require.Equal(t, w.DType, got.DType, name)
		require.Equal(t, w.Shape, got.Shape, name)
		require.True(t, bytes.Equal(w.Data, got.Data), "%s: data differs", name)
	}
	require.Empty(t, ck.Unused())
	g := ck.GGUF()
	require.NotNil(t, g)
	v, ok := g.Value("test.ints")
	require.True(t, ok)
	ints, ok := v.Ints()
	require.True(t, ok)
	require.Equal(t, []int64{-1, 5}, ints)
	v, _ = g.Value("test.flag")
	b, ok := v.Bool()
	require.True(t, ok && b)
	v, _ = g.Value("tokenizer.ggml.tokens")
	toks, ok := v.Strings()
	require.True(t, ok)
	require.Equal(t, []string{"a", "b"}, toks)
	// In the file, q is in llama.cpp's order: row h·d + 2i + s is HF row
	// h·d + s·d/2 + i.
	raw, err := g.Tensor("blk.0.attn_q.weight")
	require.NoError(t, err)
	rb := len(raw.Data) / raw.Shape[0]
	q := hf[LayerTensor(0, QProj)]
	d := cfg.HeadDim
	for _, c := range []struct{ h, s, i int }{{0, 1, 0}, {1, 0, 5}, {3, 1, 31}} {
		g, h := c.h*d+2*c.i+c.s, c.h*d+c.s*d/2+c.i
		require.Equal(t, q.Data[h*rb:(h+1)*rb], raw.Data[g*rb:(g+1)*rb])
	}
}

// TestGGUFTiedAndDefaults: a file without output.weight is tied, and the
// head count of KV heads, head dim and rope base take llama.cpp's defaults.
func TestGGUFTiedAndDefaults(t *testing.T) {
	var buf bytes.Buffer
	kvs := []GGUFKV{{"general.architecture", GGUFString("llama")},
		{"llama.context_length", GGUFUint32(64)}, {"llama.embedding_length", GGUFUint32(32)},
		{"llama.block_count", GGUFUint32(1)}, {"llama.feed_forward_length", GGUFUint32(64)},
		{"llama.attention.head_count", GGUFUint32(4)}, {"llama.attention.layer_norm_rms_epsilon", GGUFFloat32(1e-6)}}
	shapes := map[string][]int{"token_embd.weight": {10, 32}, "output_norm.weight": {32}}
	var infos []GGUFTensorInfo
	for _, n := range []string{"token_embd.weight", "output_norm.weight"} {
		infos = append(infos, GGUFTensorInfo{Name: n, DType: F32, Shape: shapes[n]})
	}
	require.NoError(t, WriteGGUF(&buf, kvs, infos, func(i int, w io.Writer) error {
		n := 1
		for _, d := range infos[i].Shape {
			n *= d
		}
		_, err := w.Write(make([]byte, 4*n))
		return err
	}))
	g, err := ParseGGUF("mem", buf.Bytes())
	require.NoError(t, err)
	c, err := g.LlamaConfig()
	require.NoError(t, err)
	require.True(t, c.TieWordEmbeddings)
	require.Equal(t, 4, c.NumKeyValueHeads)
	require.Equal(t, 8, c.HeadDim)
	require.Equal(t, 10, c.VocabSize)
	require.Equal(t, 10000.0, c.RopeTheta)
	require.Equal(t, float64(float32(1e-6)), c.RMSNormEps)
}

// ggufBuilder writes a GGUF file by hand, for malformed ones.
type ggufBuilder struct{ b []byte }

func (g *ggufBuilder) u32(v uint32) *ggufBuilder {
	g.b = binary.LittleEndian.AppendUint32(g.b, v)
	return g
}
func (g *ggufBuilder) u64(v uint64) *ggufBuilder {
	g.b = binary.LittleEndian.AppendUint64(g.b, v)
	return g
}
func (g *ggufBuilder) str(s string) *ggufBuilder {
	g.u64(uint64(len(s)))
	g.b = append(g.b, s...)
	return g
}
func (g *ggufBuilder) pad() *ggufBuilder {
	for len(g.b)%32 != 0 {
		g.b = append(g.b, 0)
	}
	return g
}

// TestGGUFMalformed: each malformed file is an error that says what and
// where, never a panic or an allocation the file cannot back.
func TestGGUFMalformed(t *testing.T) {
	hdr := func(tensors, kvs uint64) *ggufBuilder {
		return (&ggufBuilder{}).u32(ggufMagic).u32(3).u64(tensors).u64(kvs)
	}
	tensor := func(g *ggufBuilder, name string, dims []uint64, typ uint32, off uint64) *ggufBuilder {
		g.str(name).u32(uint32(len(dims)))
		for _, d := range dims {
			g.u64(d)
		}
		return g.u32(typ).u64(off)
	}
	one := tensor(hdr(1, 0), "w", []uint64{32, 2}, 0, 0).pad()
	one.b = append(one.b, make([]byte, 256)...)
	_, err := ParseGGUF("ok", one.b)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "past the end"},
		{"bad magic", []byte("GGML\x03\x00\x00\x00"), "not a GGUF file"},
		{"version 1", (&ggufBuilder{}).u32(ggufMagic).u32(1).b, "version 1"},
		{"huge tensor count", hdr(1<<40, 0).b, "tensor count"},
		{"huge kv count", hdr(0, 1<<40).b, "metadata count"},
		{"string past the end", append(hdr(0, 1).u64(1<<40).b, make([]byte, 16)...), "past the end"},
		{"non-UTF-8 key", hdr(0, 1).str("\xff").u32(ggufUint8).b, "not UTF-8"},
		{"unknown value type", hdr(0, 1).str("k").u32(99).b, "unknown value type"},
		{"array of arrays", append(hdr(0, 1).str("k").u32(ggufArray).u32(ggufArray).u64(1).b, make([]byte, 32)...), "array of arrays"},
		{"huge array", hdr(0, 1).str("k").u32(ggufArray).u32(ggufUint64).u64(1 << 50).b, "element count"},
		{"bool 2", append(hdr(0, 1).str("k").u32(ggufBool).b, 2), "bool value 2"},
		{"duplicate key", append(append(hdr(0, 2).str("k").u32(ggufUint8).b, 1), append((&ggufBuilder{}).str("k").u32(ggufUint8).b, 1)...), "twice"},
		{"bad alignment", hdr(0, 1).str("general.alignment").u32(ggufUint32).u32(48).b, "alignment"},
		{"five dimensions", tensor(hdr(1, 0), "w", []uint64{1, 1, 1, 1, 1}, 0, 0).b, "5 dimensions"},
		{"zero dimension", tensor(hdr(1, 0), "w", []uint64{0, 2}, 0, 0).pad().b, "dimension 0"},
		{"unsupported type", tensor(hdr(1, 0), "w", []uint64{256}, 11, 0).pad().b, "Q3_K, which ndbg does not load"},
		{"unknown type", tensor(hdr(1, 0), "w", []uint64{32}, 200, 0).pad().b, "unknown type 200"},
		{"partial block", tensor(hdr(1, 0), "w", []uint64{100, 2}, 12, 0).pad().b, "not whole blocks"},
		{"misaligned offset", tensor(hdr(1, 0), "w", []uint64{2}, 0, 4).pad().b, "not a multiple"},
		{"data past the end", tensor(hdr(1, 0), "w", []uint64{1 << 20}, 0, 0).pad().b, "run past the end"},
		{"huge shape", tensor(hdr(1, 0), "w", []uint64{1 << 31, 1 << 31}, 0, 0).pad().b, "dimension"},
		{"overflowing shape", tensor(hdr(1, 0), "w", []uint64{1<<31 - 1, 1<<31 - 1, 1<<31 - 1}, 0, 0).pad().b, "overflow"},
		{"empty name", tensor(hdr(1, 0), "", []uint64{2}, 0, 0).pad().b, "empty name"},
		{"duplicate tensor", append(tensor(tensor(hdr(2, 0), "w", []uint64{2}, 0, 0), "w", []uint64{2}, 0, 32).pad().b, make([]byte, 64)...), "twice"},
		{"overlap", append(tensor(tensor(hdr(2, 0), "a", []uint64{16}, 0, 0), "b", []uint64{16}, 0, 32).pad().b, make([]byte, 128)...), "overlap"},
	} {
		_, err := ParseGGUF("bad.gguf", c.data)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
		require.Contains(t, err.Error(), "bad.gguf", c.name)
	}
}

// TestGGUFLlamaConfigErrors: metadata the engine cannot compute as
// llama.cpp does is refused with the key named.
func TestGGUFLlamaConfigErrors(t *testing.T) {
	base := []GGUFKV{{"general.architecture", GGUFString("llama")},
		{"llama.context_length", GGUFUint32(64)}, {"llama.embedding_length", GGUFUint32(32)},
		{"llama.block_count", GGUFUint32(1)}, {"llama.feed_forward_length", GGUFUint32(64)},
		{"llama.attention.head_count", GGUFUint32(4)}, {"llama.vocab_size", GGUFUint32(10)}}
	for _, c := range []struct {
		name string
		kvs  []GGUFKV
		want string
	}{
		{"another architecture", []GGUFKV{{"general.architecture", GGUFString("gpt2")}}, `"gpt2", not "llama"`},
		{"missing key", base[:3], "block_count is missing"},
		{"string for a number", append(slices.Clone(base[:5]), GGUFKV{"llama.attention.head_count", GGUFString("4")}), "head_count must be"},
		{"no vocabulary", base[:6], "vocab_size is 0"},
		{"partial rotary", append(slices.Clone(base), GGUFKV{"llama.rope.dimension_count", GGUFUint32(4)}), "partial rotary"},
		{"experts", append(slices.Clone(base), GGUFKV{"llama.expert_count", GGUFUint32(8)}), "mixture-of-experts"},
		{"yarn", append(slices.Clone(base), GGUFKV{"llama.rope.scaling.type", GGUFString("yarn")}), "yarn"},
		{"bad heads", append(slices.Clone(base), GGUFKV{"llama.attention.head_count_kv", GGUFUint32(3)}), "divisible"},
		{"bos outside", append(slices.Clone(base), GGUFKV{"tokenizer.ggml.bos_token_id", GGUFUint32(10)}), "bos_token_id"},
	} {
		var buf bytes.Buffer
		require.NoError(t, WriteGGUF(&buf, c.kvs, nil, nil), c.name)
		g, err := ParseGGUF("m.gguf", buf.Bytes())
		require.NoError(t, err, c.name)
		_, err = g.LlamaConfig()
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
}

// TestGGUFWriteErrors: what the writer refuses.
func TestGGUFWriteErrors(t *testing.T) {
	nop := func(int, io.Writer) error { return nil }
	for _, c := range []struct {
		name    string
		kvs     []GGUFKV
		tensors []GGUFTensorInfo
		data    func(int, io.Writer) error
		want    string
	}{
		{"duplicate key", []GGUFKV{{"a", GGUFUint32(1)}, {"a", GGUFUint32(2)}}, nil, nop, "twice"},
		{"alignment", []GGUFKV{{"general.alignment", GGUFUint32(64)}}, nil, nop, "alignment"},
		{"I32 tensor", nil, []GGUFTensorInfo{{"t", I32, []int{2}}}, nop, "cannot be written"},
		{"partial block", nil, []GGUFTensorInfo{{"t", Q4_K, []int{2, 100}}}, nop, "not whole"},
		{"short data", nil, []GGUFTensorInfo{{"t", F32, []int{2}}}, nop, "wrote 0 bytes, want 8"},
		{"same name", nil, []GGUFTensorInfo{{"t", F32, []int{2}}, {"t", F32, []int{2}}}, nop, "repeated"},
	} {
		err := WriteGGUF(io.Discard, c.kvs, c.tensors, c.data)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
	}
}

// FuzzParseGGUF: whatever the parser accepts is usable: every tensor reads
// within the data (quantized ones dequantize), and the metadata re-written
// with the tensors parses to the same keys and tensor shapes.
func FuzzParseGGUF(f *testing.F) {
	var buf bytes.Buffer
	kvs := []GGUFKV{{"general.architecture", GGUFString("llama")}, {"a.ints", GGUFInt32s([]int32{1, -2})},
		{"a.strs", GGUFStrings([]string{"x", ""})}, {"a.f", GGUFFloat32(1.5)}, {"a.b", GGUFBool(true)}}
	infos := []GGUFTensorInfo{{"q", Q8_0, []int{2, 32}}, {"k", Q4_K, []int{1, 256}}, {"f", F16, []int{3}}, {"n", F32, []int{2, 2}}}
	require.NoError(f, WriteGGUF(&buf, kvs, infos, func(i int, w io.Writer) error {
		n := 1
		for _, d := range infos[i].Shape {
			n *= d
		}
		size, _ := infos[i].DType.Bytes(n)
		_, err := w.Write(make([]byte, size))
		return err
	}))
	f.Add(buf.Bytes())
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := ParseGGUF("fuzz", data)
		if err != nil {
			return
		}
		var infos []GGUFTensorInfo
		var ts []*Tensor
		for _, n := range g.Names() {
			tt, err := g.Tensor(n)
			require.NoError(t, err)
			if _, err := tt.F32(); err != nil {
				require.Contains(t, err.Error(), "not floating point", n)
			}
			infos = append(infos, GGUFTensorInfo{Name: n, DType: tt.DType, Shape: tt.Shape})
			ts = append(ts, tt)
		}
		var kvs []GGUFKV
		for _, k := range g.Keys() {
			v, _ := g.Value(k)
			if k == "general.alignment" {
				continue
			}
			kvs = append(kvs, GGUFKV{k, v})
		}
		var out bytes.Buffer
		require.NoError(t, WriteGGUF(&out, kvs, infos, func(i int, w io.Writer) error { _, err := w.Write(ts[i].Data); return err }))
		back, err := ParseGGUF("rewritten", out.Bytes())
		require.NoError(t, err)
		require.Equal(t, g.Names(), back.Names())
		for _, n := range g.Names() {
			a, _ := g.Tensor(n)
			b, _ := back.Tensor(n)
			require.Equal(t, a, b)
		}
		for _, k := range back.Keys() {
			a, _ := g.Value(k)
			b, _ := back.Value(k)
			if fa, ok := a.Float(); ok && math.IsNaN(fa) {
				fb, _ := b.Float()
				require.True(t, math.IsNaN(fb))
				continue
			}
			require.Equal(t, a, b, k)
		}
	})
}
