package weights

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// TensorSpec names one tensor an architecture needs and its exact shape.
type TensorSpec struct {
	Name  string
	Shape []int
}

// LlamaTensors lists the tensors of a Hugging Face LlamaForCausalLM (and
// CwmForCausalLM, which has the same weights) with config c, in the order
// transformers stores them: the embedding, each layer's norms, attention and
// SwiGLU projections (with biases when attention_bias or mlp_bias is set),
// the final norm, and lm_head unless the embeddings are tied.
func LlamaTensors(c *Config) []TensorSpec {
	H, V, F := c.HiddenSize, c.VocabSize, c.IntermediateSize
	Q, KV := c.QDim(), c.KVDim()
	specs := []TensorSpec{{"model.embed_tokens.weight", []int{V, H}}}
	for l := 0; l < c.NumHiddenLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		specs = append(specs,
			TensorSpec{p + "input_layernorm.weight", []int{H}},
			TensorSpec{p + "self_attn.q_proj.weight", []int{Q, H}},
			TensorSpec{p + "self_attn.k_proj.weight", []int{KV, H}},
			TensorSpec{p + "self_attn.v_proj.weight", []int{KV, H}},
			TensorSpec{p + "self_attn.o_proj.weight", []int{H, Q}},
		)
		if c.AttentionBias {
			specs = append(specs,
				TensorSpec{p + "self_attn.q_proj.bias", []int{Q}},
				TensorSpec{p + "self_attn.k_proj.bias", []int{KV}},
				TensorSpec{p + "self_attn.v_proj.bias", []int{KV}},
				TensorSpec{p + "self_attn.o_proj.bias", []int{H}},
			)
		}
		specs = append(specs,
			TensorSpec{p + "post_attention_layernorm.weight", []int{H}},
			TensorSpec{p + "mlp.gate_proj.weight", []int{F, H}},
			TensorSpec{p + "mlp.up_proj.weight", []int{F, H}},
			TensorSpec{p + "mlp.down_proj.weight", []int{H, F}},
		)
		if c.MLPBias {
			specs = append(specs,
				TensorSpec{p + "mlp.gate_proj.bias", []int{F}},
				TensorSpec{p + "mlp.up_proj.bias", []int{F}},
				TensorSpec{p + "mlp.down_proj.bias", []int{H}},
			)
		}
	}
	specs = append(specs, TensorSpec{"model.norm.weight", []int{H}})
	if !c.TieWordEmbeddings {
		specs = append(specs, TensorSpec{"lm_head.weight", []int{V, H}})
	}
	return specs
}

// CheckLlama verifies that ck (opened with its config) holds exactly the
// tensors LlamaTensors lists, with those shapes, and nothing else except an
// lm_head.weight next to tied embeddings (some exporters write it anyway).
// One error lists every problem, so an export can be fixed in one pass.
func CheckLlama(ck *Checkpoint) error {
	if ck.Config == nil {
		return fmt.Errorf("weights: %s: no config to check against", ck.Dir)
	}
	var errs []error
	want := map[string]bool{}
	for _, s := range LlamaTensors(ck.Config) {
		want[s.Name] = true
		if _, err := ck.Require(s.Name, s.Shape...); err != nil {
			errs = append(errs, err)
		}
	}
	var extra []string
	for _, n := range ck.Names() {
		if !want[n] && !(n == "lm_head.weight" && ck.Config.TieWordEmbeddings) {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		if len(extra) > 10 {
			extra = append(extra[:10], fmt.Sprintf("and %d more", len(extra)-10))
		}
		errs = append(errs, fmt.Errorf("weights: %s: tensors the architecture does not use: %s", ck.Dir, strings.Join(extra, ", ")))
	}
	return errors.Join(errs...)
}

// RandomLlama makes a complete random LLaMA checkpoint's tensors for config
// c, in dtype dt: matrices and biases drawn from N(0, 0.02²) and norm
// weights near 1 (1 + N(0, 0.1²)) so that tests exercise the norm scaling.
// The same seed gives the same tensors. It is meant for tests and
// benchmarks; pass the result to WriteCheckpoint.
func RandomLlama(c *Config, dt DType, seed uint64) ([]Tensor, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	r := rand.New(rand.NewPCG(seed, 0x6c6c616d61))
	var out []Tensor
	for _, s := range LlamaTensors(c) {
		n, _ := numElements(s.Shape)
		vals := make([]float32, n)
		norm := strings.HasSuffix(s.Name, "norm.weight")
		for i := range vals {
			if norm {
				vals[i] = 1 + 0.1*float32(r.NormFloat64())
			} else {
				vals[i] = 0.02 * float32(r.NormFloat64())
			}
		}
		t, err := NewTensor(s.Name, dt, s.Shape, vals)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
