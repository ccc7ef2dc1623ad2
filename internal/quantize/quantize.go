// Package quantize writes LLaMA models as GGUF files (llama.cpp's format)
// with their matrices quantized as llama.cpp's llama-quantize quantizes
// them (weights.QuantMix: the mix's type per tensor, kernels.QuantizeRow's
// reference quantizers), so that the file ndbg writes from a Hugging Face
// checkpoint is the file llama-quantize writes from the same weights
// converted to GGUF; Safetensors writes the same tensors as a Hugging Face
// checkpoint directory. It is behind `ndbg quantize` (ndbg.Quantize,
// ndbg.QuantizeSafetensors) and the benchmark's model files (Random).
package quantize

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// Types are the types Checkpoint and Random write: the quantization mixes
// of weights.QuantMix, and f32 and bf16 (every matrix in that type; the
// norms F32), llama.cpp's F32 and BF16 files.
var Types = append([]string{"f32", "bf16"}, weights.QuantMixes...)

// typeOf returns the type of each tensor and the file type for typ.
func typeOf(c *weights.Config, typ string) (func(string, []int) weights.DType, uint32, error) {
	switch strings.ToLower(typ) {
	case "f32":
		return func(string, []int) weights.DType { return weights.F32 }, weights.GGUFFileF32, nil
	case "bf16":
		return func(_ string, s []int) weights.DType {
			if len(s) < 2 {
				return weights.F32
			}
			return weights.BF16
		}, weights.GGUFFileBF16, nil
	}
	f, ft, err := weights.QuantMix(c, typ)
	if err != nil {
		return nil, 0, fmt.Errorf("quantize: %w (or f32, bf16)", err)
	}
	return f, ft, nil
}

// Checkpoint writes the model of ck (a LLaMA checkpoint: every tensor of
// weights.LlamaTensors, no biases) and its tokenizer tok to w as a GGUF file
// of type typ (Types) named name. Tensors are read, quantized (on threads
// threads) and written one at a time.
func Checkpoint(ctx context.Context, ck *weights.Checkpoint, tok *tokenizer.Tokenizer, name, typ string, threads int, w io.Writer) error {
	c := ck.Config
	if err := weights.CheckLlama(ck); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if tok.VocabSize() > c.VocabSize {
		return fmt.Errorf("quantize: the tokenizer has %d tokens, the model's vocabulary %d", tok.VocabSize(), c.VocabSize)
	}
	tkv, err := tok.GGUFMetadata()
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	// llama.cpp wants a token for every row of the embedding: pad as its
	// converter does.
	tkv = padVocab(tkv, c.VocabSize)
	dt, fileType, err := typeOf(c, typ)
	if err != nil {
		return err
	}
	specs := weights.LlamaTensors(c)
	infos := make([]weights.GGUFTensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = weights.GGUFTensorInfo{Name: s.Name, DType: dt(s.Name, s.Shape), Shape: s.Shape}
	}
	pool := kernels.NewPool(threads)
	defer pool.Close()
	return weights.WriteLlamaGGUF(w, c, name, fileType, tkv, infos, func(i int) (*weights.Tensor, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, err := ck.Tensor(specs[i].Name)
		if err != nil {
			return nil, err
		}
		return convert(pool, t, infos[i].DType)
	})
}

// Safetensors writes the model of ck (as Checkpoint takes it) as a Hugging
// Face checkpoint directory dir: config.json, tokenizerJSON as
// tokenizer.json, and model.safetensors with the matrices in the types of
// typ (Types), quantized as Checkpoint quantizes them (the same bytes): a
// quantized tensor is stored as U8 rows of llama.cpp's blocks, marked in
// the file's metadata (weights.QuantizedKeyPrefix), which any safetensors
// reader reads and ndbg loads as the quantized type. The whole quantized
// model is held in memory while the file is written. dir is made if
// missing.
func Safetensors(ctx context.Context, ck *weights.Checkpoint, tokenizerJSON []byte, typ string, threads int, dir string) error {
	c := ck.Config
	if err := weights.CheckLlama(ck); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	dt, _, err := typeOf(c, typ)
	if err != nil {
		return err
	}
	pool := kernels.NewPool(threads)
	defer pool.Close()
	var tensors []weights.Tensor
	for _, s := range weights.LlamaTensors(c) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		t, err := ck.Tensor(s.Name)
		if err != nil {
			return fmt.Errorf("quantize: %w", err)
		}
		q, err := convert(pool, t, dt(s.Name, s.Shape))
		if err != nil {
			return err
		}
		tensors = append(tensors, *q)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := weights.WriteCheckpoint(dir, c, tensors, 0, map[string]string{"format": "pt", "quantization": typ}); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokenizerJSON, 0o644); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	return nil
}

// padVocab extends the token list (and types) of tokenizer metadata to n
// entries with unused placeholder tokens [PAD<id>], as llama.cpp's
// converter does for a vocabulary larger than the tokenizer's.
func padVocab(kvs []weights.GGUFKV, n int) []weights.GGUFKV {
	for i, kv := range kvs {
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			toks, _ := kv.Value.Strings()
			for id := len(toks); id < n; id++ {
				toks = append(toks, fmt.Sprintf("[PAD%d]", id))
			}
			kvs[i].Value = weights.GGUFStrings(toks)
		case "tokenizer.ggml.token_type":
			ints, _ := kv.Value.Ints()
			types := make([]int32, 0, n)
			for _, v := range ints {
				types = append(types, int32(v))
			}
			for len(types) < n {
				types = append(types, tokenizer.GGUFUnused)
			}
			kvs[i].Value = weights.GGUFInt32s(types)
		}
	}
	return kvs
}

// convert returns t in type dt, quantizing its rows in parallel on pool.
func convert(pool *kernels.Pool, t *weights.Tensor, dt weights.DType) (*weights.Tensor, error) {
	if t.DType == dt {
		return t, nil
	}
	if !dt.Quantized() || len(t.Shape) != 2 {
		return t.Quantize(dt)
	}
	rows, cols := t.Shape[0], t.Shape[1]
	kd, _ := dt.Kernels()
	if cols%kd.BlockLen() != 0 {
		return nil, fmt.Errorf("quantize: tensor %q: rows of %d are not whole %v blocks", t.Name, cols, dt)
	}
	vals, err := t.F32()
	if err != nil {
		return nil, err
	}
	rb := kd.RowBytes(cols)
	out := &weights.Tensor{Name: t.Name, DType: dt, Shape: []int{rows, cols}, Data: make([]byte, rows*rb)}
	quantizeRows(pool, kd, out.Data, vals, rows, cols)
	return out, nil
}

// quantizeRows quantizes rows of cols values into dst on pool.
func quantizeRows(pool *kernels.Pool, kd kernels.DType, dst []byte, vals []float32, rows, cols int) {
	rb := kd.RowBytes(cols)
	pool.For(rows, max(1, (1<<16)/cols), func(lo, hi int) {
		// Whole rows of whole blocks: QuantizeRow cannot fail here.
		_ = kernels.QuantizeRow(kd, dst[lo*rb:hi*rb], vals[lo*cols:hi*cols])
	})
}

// Random writes a model of config c with random weights as a GGUF file of
// type typ, for benchmarks (the file ndbg and llama.cpp both run): F32,
// F16 and BF16 matrices drawn uniformly in ±1/sqrt(cols); quantized ones
// drawn as blocks directly (random quants, scales that give values of
// about that size, centred: randomBlock), in row chunks, so that a 32B
// model's 19 GB of Q4_K_M takes minutes rather than the hours of the
// reference quantizer and about 1 GB of memory beside the output. The
// tokenizer is llama.cpp's "none" with c's vocabulary size, as for
// llama-bench: such a file has no text tokenizer.
func Random(ctx context.Context, c *weights.Config, name, typ string, seed uint64, threads int, w io.Writer) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	dt, fileType, err := typeOf(c, typ)
	if err != nil {
		return err
	}
	specs := weights.LlamaTensors(c)
	infos := make([]weights.GGUFTensorInfo, len(specs))
	for i, s := range specs {
		infos[i] = weights.GGUFTensorInfo{Name: s.Name, DType: dt(s.Name, s.Shape), Shape: s.Shape}
	}
	pool := kernels.NewPool(threads)
	defer pool.Close()
	extra := []weights.GGUFKV{{Key: "tokenizer.ggml.model", Value: weights.GGUFString("none")}}
	return weights.WriteLlamaGGUF(w, c, name, fileType, extra, infos, func(i int) (*weights.Tensor, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return randomTensor(pool, infos[i], seed, uint64(i))
	})
}

// randomTensor draws tensor info's values (1-D: norms near 1) and
// converts them to its type, a chunk of rows at a time.
func randomTensor(pool *kernels.Pool, info weights.GGUFTensorInfo, seed, stream uint64) (*weights.Tensor, error) {
	if len(info.Shape) == 1 {
		r := rand.New(rand.NewPCG(seed, stream))
		v := make([]float32, info.Shape[0])
		for i := range v {
			v[i] = 1 + float32(r.Float64()-0.5)*0.2
		}
		t, err := weights.NewTensor(info.Name, weights.F32, info.Shape, v)
		return &t, err
	}
	rows, cols := info.Shape[0], info.Shape[1]
	n := rows * cols
	size, ok := info.DType.Bytes(n)
	if !ok {
		return nil, fmt.Errorf("quantize: tensor %q: %v of shape %v", info.Name, info.DType, info.Shape)
	}
	out := &weights.Tensor{Name: info.Name, DType: info.DType, Shape: info.Shape, Data: make([]byte, size)}
	rb := size / rows
	const chunk = 64 // rows per task: each task draws its own stream
	scale := float32(1 / math.Sqrt(float64(cols)))
	kd, _ := info.DType.Kernels()
	pool.For((rows+chunk-1)/chunk, 1, func(lo, hi int) {
		vals := make([]float32, chunk*cols)
		for c := lo; c < hi; c++ {
			r0, r1 := c*chunk, min(rows, (c+1)*chunk)
			r := rand.New(rand.NewPCG(seed, stream<<24|uint64(c)))
			v := vals[:(r1-r0)*cols]
			if !info.DType.Quantized() {
				for i := range v {
					v[i] = float32(2*r.Float64()-1) * scale
				}
			}
			dst := out.Data[r0*rb : r1*rb]
			switch info.DType {
			case weights.F32:
				for i, x := range v {
					binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
				}
			case weights.BF16:
				for i, x := range v {
					binary.LittleEndian.PutUint16(dst[2*i:], kernels.F32ToBF16(x))
				}
			case weights.F16:
				for i, x := range v {
					binary.LittleEndian.PutUint16(dst[2*i:], kernels.F32ToF16(x))
				}
			default: // quantized: whole blocks (the shape was checked by Bytes above)
				bb := kd.BlockBytes()
				for b := 0; b < len(dst)/bb; b++ {
					randomBlock(kd, dst[b*bb:(b+1)*bb], scale, r)
				}
			}
		}
	})
	return out, nil
}

// randomBlock fills one block of type kd with random quants and scales for
// values of magnitude about a, centred on zero: Q8_0, Q4_0 and Q5_0 a
// scale for ±a at the extreme quants; Q4_K sub-block scales and mins in
// 32…63 with dmin·m = 7.5·d·sc (the middle nibble is zero); Q6_K scales in
// 64…127 (and their negatives).
func randomBlock(kd kernels.DType, b []byte, a float32, r *rand.Rand) {
	f16 := func(o int, v float32) { binary.LittleEndian.PutUint16(b[o:], kernels.F32ToF16(v)) }
	fill := func(p []byte) {
		for i := 0; i < len(p); i += 8 {
			u := r.Uint64()
			for j := i; j < min(i+8, len(p)); j++ {
				p[j] = byte(u >> (8 * (j - i)))
			}
		}
	}
	switch kd {
	case kernels.Q8_0:
		f16(0, a/127)
		fill(b[2:34])
		for i := 2; i < 34; i++ {
			if b[i] == 0x80 { // -128: the reference quantizer writes -127…127
				b[i] = 0x81
			}
		}
	case kernels.Q4_0:
		f16(0, a/8)
		fill(b[2:18])
	case kernels.Q5_0:
		f16(0, a/16)
		fill(b[2:22])
	case kernels.Q4_K:
		d := 2 * a / (15 * 48)
		f16(0, d)
		f16(2, 7.5*d)
		sc := b[4:16]
		var s6 [8]uint8
		for j := range s6 {
			s6[j] = uint8(32 + r.IntN(32))
		}
		for j := range 8 { // m = sc: the packing of quantize_row_q4_K_ref
			if j < 4 {
				sc[j], sc[j+4] = s6[j], s6[j]
			} else {
				sc[j+4] = s6[j]&0xf | (s6[j]&0xf)<<4
				sc[j-4] |= (s6[j] >> 4) << 6
				sc[j] |= (s6[j] >> 4) << 6
			}
		}
		fill(b[16:144])
	case kernels.Q6_K:
		fill(b[0:192])
		for j := range 16 {
			v := int8(64 + r.IntN(64))
			if r.IntN(2) == 0 {
				v = -v
			}
			b[192+j] = byte(v)
		}
		f16(208, a/(32*96))
	}
}
