package weights

import (
	"fmt"
	"strings"

	"github.com/ndbg/ndbg/kernels"
)

// QuantMixes are the quantization mixes QuantMix knows, by llama.cpp's
// names for them (llama-quantize's file types).
var QuantMixes = []string{"q8_0", "q4_0", "q4_k_m"}

// QuantMix returns the type llama.cpp's llama-quantize (without an
// importance matrix, --pure not given) stores each tensor of a LLaMA model
// of config c in for the named mix, and the file type to write as
// general.file_type. The rules are llama-quant.cpp's
// (llama_tensor_get_type) for a model without experts:
//
//   - tensors of fewer than two dimensions (the norms) stay as they are (F32);
//   - q8_0: every matrix Q8_0;
//   - q4_0: every matrix Q4_0, but the output head Q6_K;
//   - q4_k_m: every matrix Q4_K, but the output head (and a tied
//     embedding) Q6_K, and attn_v and ffn_down Q6_K in the layers where
//     use_more_bits says so (the first and last eighth of the layers and
//     every third in between);
//   - a matrix whose rows are not whole blocks of the chosen type falls
//     back as llama.cpp's tensor_type_fallback does: the output head to
//     Q8_0, Q4_K to Q5_0, Q6_K to Q8_0, and to F16 when rows are not
//     whole blocks of 32.
func QuantMix(c *Config, mix string) (typeOf func(hf string, shape []int) DType, fileType uint32, err error) {
	var base DType
	switch strings.ToLower(mix) {
	case "q8_0":
		base, fileType = Q8_0, GGUFFileQ8_0
	case "q4_0":
		base, fileType = Q4_0, GGUFFileQ4_0
	case "q4_k_m":
		base, fileType = Q4_K, GGUFFileQ4_KM
	default:
		return nil, 0, fmt.Errorf("weights: unknown quantization %q (have %s)", mix, strings.Join(QuantMixes, ", "))
	}
	n := c.NumHiddenLayers
	moreBits := func(i int) bool { return i < n/8 || i >= 7*n/8 || (i-n/8)%3 == 2 }
	blockOf := func(dt DType) int { k, _ := dt.Kernels(); return k.BlockLen() }
	return func(hf string, shape []int) DType {
		if len(shape) < 2 {
			return F32
		}
		cols := shape[len(shape)-1]
		dt := base
		layer := -1
		if rest, ok := strings.CutPrefix(hf, "model.layers."); ok {
			fmt.Sscanf(rest, "%d.", &layer)
		}
		switch {
		case hf == LMHead || hf == EmbedTokens && c.TieWordEmbeddings:
			switch {
			case cols%blockOf(base) != 0:
				dt = Q8_0
			case base != Q8_0:
				dt = Q6_K
			}
		case base == Q4_K && strings.HasSuffix(hf, VProj) && moreBits(layer),
			base == Q4_K && strings.HasSuffix(hf, DownProj) && moreBits(layer):
			dt = Q6_K
		}
		if cols%blockOf(dt) != 0 {
			switch dt {
			case Q4_K:
				dt = Q5_0
			case Q6_K:
				dt = Q8_0
			}
			if cols%blockOf(dt) != 0 {
				dt = F16
			}
		}
		return dt
	}, fileType, nil
}

// Quantize returns t (F32, F16 or BF16) in type dt: quantized by
// kernels.QuantizeRow (llama.cpp's reference quantizers), or converted.
func (t *Tensor) Quantize(dt DType) (*Tensor, error) {
	if t.DType == dt {
		return t, nil
	}
	vals, err := t.F32()
	if err != nil {
		return nil, err
	}
	if !dt.Quantized() {
		out, err := NewTensor(t.Name, dt, t.Shape, vals)
		return &out, err
	}
	k, _ := dt.Kernels()
	if len(t.Shape) == 0 || t.Shape[len(t.Shape)-1]%k.BlockLen() != 0 {
		return nil, fmt.Errorf("tensor %q: shape %v is not whole %v blocks", t.Name, t.Shape, dt)
	}
	q := make([]byte, k.RowBytes(len(vals)))
	if err := kernels.QuantizeRow(k, q, vals); err != nil {
		return nil, fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return &Tensor{Name: t.Name, DType: dt, Shape: append([]int(nil), t.Shape...), Data: q}, nil
}
