package weights

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// ggufPyRead reads a GGUF file with llama.cpp's gguf-py and prints, as
// JSON, its metadata (scalars and arrays as values) and each tensor's type
// name, shape (row-major), its bytes' length and its values dequantized by
// gguf-py's own numpy dequantizers.
const ggufPyRead = `
import json, sys
import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf.quants import dequantize
r = GGUFReader(sys.argv[1])
meta = {}
for k, f in r.fields.items():
    if k.startswith("GGUF."):
        continue
    t = f.types[0]
    if t == GGUFValueType.ARRAY:
        if f.types[1] == GGUFValueType.STRING:
            meta[k] = [bytes(f.parts[i]).decode() for i in f.data]
        else:
            meta[k] = [f.parts[i].tolist()[0] for i in f.data]
    elif t == GGUFValueType.STRING:
        meta[k] = bytes(f.parts[f.data[0]]).decode()
    else:
        meta[k] = f.parts[f.data[0]].tolist()[0]
tensors = {}
for t in r.tensors:
    vals = dequantize(t.data, t.tensor_type).astype(np.float64).reshape(-1)
    tensors[t.name] = {"type": t.tensor_type.name, "shape": [int(d) for d in reversed(t.shape.tolist())],
                       "bytes": int(t.n_bytes), "values": vals.tolist()}
print(json.dumps({"meta": meta, "tensors": tensors}))
`

// ggufPyWrite writes a GGUF file with gguf-py's GGUFWriter: a LLaMA-shaped
// header and tensors quantized by gguf-py's numpy quantizers (Q8_0, Q4_0,
// Q5_0) and plain F32/F16, from values it draws with a fixed seed, and
// prints the F32 values it quantized, as JSON.
const ggufPyWrite = `
import json, sys
import numpy as np
import gguf
from gguf.quants import quantize
w = gguf.GGUFWriter(sys.argv[1], "llama")
w.add_context_length(64); w.add_embedding_length(64); w.add_block_count(1); w.add_feed_forward_length(128)
w.add_head_count(4); w.add_head_count_kv(2); w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(10000.0)
w.add_vocab_size(32)
w.add_array("test.strings", ["a", "b"])
rng = np.random.default_rng(7)
vals = {}
for name, qt, shape in [("token_embd.weight", "Q8_0", (32, 64)), ("blk.0.attn_q.weight", "Q4_0", (64, 64)),
                        ("blk.0.ffn_up.weight", "Q5_0", (128, 64)), ("output_norm.weight", "F32", (64,)),
                        ("blk.0.ffn_down.weight", "F16", (64, 128))]:
    x = (rng.standard_normal(shape) * 0.1).astype(np.float32)
    vals[name] = x.reshape(-1).astype(np.float64).tolist()
    t = gguf.GGMLQuantizationType[qt]
    if qt == "F32":
        w.add_tensor(name, x)
    elif qt == "F16":
        w.add_tensor(name, x.astype(np.float16))
    else:
        w.add_tensor(name, quantize(x, t), raw_dtype=t)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(json.dumps(vals))
`

// TestGGUFAgainstLlamaCppGGUFPy: llama.cpp's gguf-py reads a file ndbg
// wrote (every metadata value; every tensor's type, shape and size, and its
// values, dequantized by gguf-py's own dequantizers, equal to ndbg's), and
// ndbg reads a file gguf-py wrote with tensors quantized by gguf-py's
// numpy quantizers (the values dequantize to what it quantized, within
// each type's step, and the q projection is un-permuted).
func TestGGUFAgainstLlamaCppGGUFPy(t *testing.T) {
	pyPath, python := oracle.LlamaCppGGUFPy(t)
	env := append(os.Environ(), "PYTHONPATH="+pyPath)

	cfg := ggufTestConfig()
	path, hf := writeTestGGUF(t, cfg, mixedDTypes, []GGUFKV{{"test.ints", GGUFInt32s([]int32{-1, 5})}})
	cmd := exec.Command(python, "-c", ggufPyRead, path)
	cmd.Env = env
	out, err := cmd.Output()
	require.NoError(t, err, "gguf-py reading %s: %s", path, stderr(err))
	var got struct {
		Meta    map[string]any
		Tensors map[string]struct {
			Type   string
			Shape  []int
			Bytes  int
			Values []float64
		}
	}
	require.NoError(t, json.Unmarshal(out, &got))
	g, err := OpenGGUF(path)
	require.NoError(t, err)
	defer g.Close()
	for _, k := range g.Keys() {
		v, _ := g.Value(k)
		pv, ok := got.Meta[k]
		require.True(t, ok, "gguf-py lacks %s", k)
		switch {
		case v.typ == ggufString:
			require.Equal(t, v.str, pv, k)
		case v.typ == ggufArray && v.elem == ggufString:
			ss, _ := v.Strings()
			require.Equal(t, len(ss), len(pv.([]any)), k)
		case v.typ == ggufArray:
			is, _ := v.Ints()
			require.Equal(t, len(is), len(pv.([]any)), k)
			for i, n := range is {
				require.Equal(t, float64(n), pv.([]any)[i], k)
			}
		case v.typ == ggufFloat32:
			require.Equal(t, float64(float32(v.num)), pv, k)
		default:
			n, _ := v.Int()
			require.Equal(t, float64(n), pv, k)
		}
	}
	require.Len(t, got.Tensors, len(g.Names()))
	for _, name := range g.Names() {
		tt, err := g.Tensor(name)
		require.NoError(t, err)
		pt := got.Tensors[name]
		require.Equal(t, tt.DType.String(), pt.Type, name)
		require.Equal(t, tt.Shape, pt.Shape, name)
		require.Equal(t, len(tt.Data), pt.Bytes, name)
		vals, err := tt.F32()
		require.NoError(t, err, name)
		require.Len(t, pt.Values, len(vals), name)
		for i, v := range vals {
			if float64(v) != pt.Values[i] {
				t.Fatalf("%s (%s) value %d: ndbg dequantizes to %v, gguf-py to %v", name, tt.DType, i, v, pt.Values[i])
			}
		}
	}
	_ = hf

	// The other way: gguf-py writes, ndbg reads.
	path = filepath.Join(t.TempDir(), "py.gguf")
	cmd = exec.Command(python, "-c", ggufPyWrite, path)
	cmd.Env = env
	out, err = cmd.Output()
	require.NoError(t, err, "gguf-py writing: %s", stderr(err))
	var src map[string][]float64
	require.NoError(t, json.Unmarshal(out, &src))
	ck, err := Open(path)
	require.NoError(t, err)
	defer ck.Close()
	require.Equal(t, 64, ck.Config.HiddenSize)
	require.Equal(t, 2, ck.Config.NumKeyValueHeads)
	require.True(t, ck.Config.TieWordEmbeddings)
	steps := map[DType]float64{Q8_0: 1.0 / 127, Q4_0: 1.0 / 8, Q5_0: 1.0 / 16, F16: 1e-3, F32: 0}
	for gname, want := range src {
		name, ok := ggufToHFName(gname)
		require.True(t, ok, gname)
		tt, err := ck.Tensor(name)
		require.NoError(t, err, name)
		vals, err := tt.F32()
		require.NoError(t, err)
		if strings.HasSuffix(name, QProj) { // back in Hugging Face's row order: compare in the file's
			back, err := PermuteRoPERows(tt, ck.Config.NumAttentionHeads, true)
			require.NoError(t, err)
			vals, _ = back.F32()
		}
		amax := 0.0
		for _, v := range want {
			amax = max(amax, math.Abs(v))
		}
		for i, v := range vals {
			require.InDelta(t, want[i], float64(v), steps[tt.DType]*amax*1.01+1e-6, "%s (%s) value %d", name, tt.DType, i)
		}
	}
	v, ok := ck.GGUF().Value("test.strings")
	require.True(t, ok)
	ss, _ := v.Strings()
	require.Equal(t, []string{"a", "b"}, ss)
}

// stderr returns a failed command's standard error.
func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
