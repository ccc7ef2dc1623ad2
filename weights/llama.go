package weights

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// The Hugging Face names of a LLaMA checkpoint's tensors: the one table
// that LlamaTensors lists, model binds by and the tests write. A layer's
// tensor is LayerTensor(l, one of the per-layer suffixes).
const (
	EmbedTokens = "model.embed_tokens.weight"
	FinalNorm   = "model.norm.weight"
	LMHead      = "lm_head.weight"

	InputNorm = "input_layernorm.weight"
	QProj     = "self_attn.q_proj.weight"
	KProj     = "self_attn.k_proj.weight"
	VProj     = "self_attn.v_proj.weight"
	OProj     = "self_attn.o_proj.weight"
	PostNorm  = "post_attention_layernorm.weight"
	GateProj  = "mlp.gate_proj.weight"
	UpProj    = "mlp.up_proj.weight"
	DownProj  = "mlp.down_proj.weight"
)

// LayerTensor returns the name of layer l's tensor with the given suffix
// (InputNorm, QProj, …): "model.layers.<l>.<suffix>".
func LayerTensor(l int, suffix string) string {
	return fmt.Sprintf("model.layers.%d.%s", l, suffix)
}

// bias is the name of the bias beside a projection's weight.
func bias(weight string) string { return strings.TrimSuffix(weight, ".weight") + ".bias" }

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
	specs := []TensorSpec{{EmbedTokens, []int{V, H}}}
	for l := 0; l < c.NumHiddenLayers; l++ {
		name := func(suffix string) string { return LayerTensor(l, suffix) }
		specs = append(specs,
			TensorSpec{name(InputNorm), []int{H}},
			TensorSpec{name(QProj), []int{Q, H}},
			TensorSpec{name(KProj), []int{KV, H}},
			TensorSpec{name(VProj), []int{KV, H}},
			TensorSpec{name(OProj), []int{H, Q}},
		)
		if c.AttentionBias {
			specs = append(specs,
				TensorSpec{bias(name(QProj)), []int{Q}},
				TensorSpec{bias(name(KProj)), []int{KV}},
				TensorSpec{bias(name(VProj)), []int{KV}},
				TensorSpec{bias(name(OProj)), []int{H}},
			)
		}
		specs = append(specs,
			TensorSpec{name(PostNorm), []int{H}},
			TensorSpec{name(GateProj), []int{F, H}},
			TensorSpec{name(UpProj), []int{F, H}},
			TensorSpec{name(DownProj), []int{H, F}},
		)
		if c.MLPBias {
			specs = append(specs,
				TensorSpec{bias(name(GateProj)), []int{F}},
				TensorSpec{bias(name(UpProj)), []int{F}},
				TensorSpec{bias(name(DownProj)), []int{H}},
			)
		}
	}
	specs = append(specs, TensorSpec{FinalNorm, []int{H}})
	if !c.TieWordEmbeddings {
		specs = append(specs, TensorSpec{LMHead, []int{V, H}})
	}
	return specs
}

// CheckLlama verifies that ck (opened with its config) holds exactly the
// tensors LlamaTensors lists, with those shapes, and nothing else except an
// lm_head.weight next to tied embeddings (a copy of the embedding, as some
// exporters write: Open refuses one that differs).
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
		if !want[n] && !(n == LMHead && ck.Config.TieWordEmbeddings) {
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
