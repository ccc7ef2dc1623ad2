package model

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ndbg/ndbg/weights"
)

// Config is the shape of a LLaMA-architecture decoder: everything the
// forward pass needs besides the weights themselves.
type Config struct {
	Hidden  int // model width (hidden_size)
	Layers  int // decoder layers (num_hidden_layers)
	Heads   int // query heads (num_attention_heads)
	KVHeads int // key/value heads (num_key_value_heads); Heads/KVHeads queries share one KV head
	HeadDim int // width of one head (head_dim, default Hidden/Heads)
	FFN     int // SwiGLU inner width (intermediate_size)
	Vocab   int // vocabulary size

	NormEps   float32 // RMSNorm epsilon (rms_norm_eps)
	RopeTheta float64 // RoPE base (rope_theta)
	// RopeScaling, when non-nil, rescales the RoPE frequencies the way
	// Llama 3.1 (and CWM) do: config.json's rope_scaling, whose rope type
	// must be "llama3" (Llama 3's piecewise rescaling, transformers'
	// _compute_llama3_parameters: wavelengths longer than
	// OriginalMaxPositionEmbeddings/LowFreqFactor are divided by Factor,
	// those shorter than OriginalMaxPositionEmbeddings/HighFreqFactor are
	// kept, and the band between is blended).
	RopeScaling *weights.RopeScaling
	Context     int // longest sequence (max_position_embeddings)

	// Windows holds, per layer, the sliding attention window: 0 for a global
	// (full causal) layer, W > 0 for a layer whose query at position p sees
	// only keys at positions > p-W (Hugging Face's sliding_window_overlay).
	// Nil means every layer is global.
	Windows []int

	// TiedEmbeddings reuses model.embed_tokens.weight as the output head
	// (tie_word_embeddings); otherwise lm_head.weight is required.
	TiedEmbeddings bool
}

// QDim is the width of all query heads together.
func (c *Config) QDim() int { return c.Heads * c.HeadDim }

// KVDim is the width of all key (or value) heads together: one cached row.
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// Window returns layer l's sliding window, 0 for a global layer.
func (c *Config) Window(l int) int {
	if c.Windows == nil || l < 0 || l >= len(c.Windows) {
		return 0
	}
	return c.Windows[l]
}

// Params returns the number of parameters (the head counted once when tied).
func (c *Config) Params() int64 {
	h, q, kv, f := int64(c.Hidden), int64(c.QDim()), int64(c.KVDim()), int64(c.FFN)
	perLayer := h*q + 2*h*kv + q*h + 3*h*f + 2*h
	n := int64(c.Layers)*perLayer + int64(c.Vocab)*h + h
	if !c.TiedEmbeddings {
		n += int64(c.Vocab) * h
	}
	return n
}

// Validate reports the first inconsistency in c.
func (c *Config) Validate() error {
	pos := []struct {
		name string
		v    int
	}{{"hidden", c.Hidden}, {"layers", c.Layers}, {"heads", c.Heads}, {"kv heads", c.KVHeads},
		{"head dim", c.HeadDim}, {"ffn", c.FFN}, {"vocab", c.Vocab}, {"context", c.Context}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("model config: %s must be positive, got %d", p.name, p.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("model config: %d query heads not a multiple of %d KV heads", c.Heads, c.KVHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("model config: head dim %d must be even for RoPE", c.HeadDim)
	}
	if !(c.NormEps > 0) {
		return fmt.Errorf("model config: rms norm eps must be positive, got %g", c.NormEps)
	}
	if !(c.RopeTheta > 1) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("model config: rope theta must be > 1, got %g", c.RopeTheta)
	}
	if s := c.RopeScaling; s != nil {
		if s.RopeType != "llama3" {
			return fmt.Errorf("model config: rope type %q not supported (default, llama3)", s.RopeType)
		}
		if err := s.Validate(); err != nil {
			return fmt.Errorf("model config: %w", err)
		}
		if !(s.Factor >= 1) {
			return fmt.Errorf("model config: llama3 rope scaling factor %g is below 1", s.Factor)
		}
	}
	if c.Windows != nil && len(c.Windows) != c.Layers {
		return fmt.Errorf("model config: %d layer windows for %d layers", len(c.Windows), c.Layers)
	}
	for l, w := range c.Windows {
		if w < 0 {
			return fmt.Errorf("model config: layer %d has negative window %d", l, w)
		}
	}
	// Guard the sizes that are multiplied together when allocating.
	const maxDim = 1 << 24
	for _, p := range pos {
		if p.v > maxDim {
			return fmt.Errorf("model config: %s %d is implausibly large", p.name, p.v)
		}
	}
	return nil
}

// cwmWindows is CWM's attention pattern: layer i is global when i%4 == 0,
// the others see a sliding window of w tokens.
func cwmWindows(layers, w int) []int {
	ws := make([]int, layers)
	for i := range ws {
		if i%4 != 0 {
			ws[i] = w
		}
	}
	return ws
}

// presets are the named shapes. Each entry builds a fresh Config so callers
// can modify what they get.
var presets = map[string]func() Config{
	// tiny: a few-layer model for tests; GQA and a sliding layer so that
	// every code path runs.
	"tiny": func() Config {
		return Config{Hidden: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, FFN: 128, Vocab: 256,
			NormEps: 1e-5, RopeTheta: 10000, Context: 256, Windows: []int{0, 16}}
	},
	// 34m and 134m match the random LLaMA models llama.cpp was measured
	// with on these machines (docs/environment.md), so tokens/s compare
	// directly.
	"34m": func() Config {
		return Config{Hidden: 512, Layers: 8, Heads: 8, KVHeads: 8, HeadDim: 64, FFN: 1376, Vocab: 8192,
			NormEps: 1e-5, RopeTheta: 10000, Context: 2048}
	},
	"134m": func() Config {
		return Config{Hidden: 768, Layers: 12, Heads: 12, KVHeads: 12, HeadDim: 64, FFN: 2048, Vocab: 32000,
			NormEps: 1e-5, RopeTheta: 10000, Context: 2048}
	},
	// 1.8b: the paper's "LLaMA-2 architecture, 1.8B" read with CWM's
	// tokenizer (docs/neural-debugger.md): about 1.76B parameters.
	"1.8b": func() Config {
		return Config{Hidden: 2048, Layers: 24, Heads: 16, KVHeads: 16, HeadDim: 128, FFN: 5632, Vocab: 128256,
			NormEps: 1e-5, RopeTheta: 10000, Context: 4096}
	},
	// 32b: CWM (Hugging Face CwmConfig defaults).
	"32b": func() Config {
		return Config{Hidden: 6144, Layers: 64, Heads: 48, KVHeads: 8, HeadDim: 128, FFN: 21504, Vocab: 128256,
			NormEps: 1e-5, RopeTheta: 1e6,
			RopeScaling: &weights.RopeScaling{RopeType: "llama3", Factor: 16, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
			Context:     131072, Windows: cwmWindows(64, 8192)}
	},
}

// Preset returns the named configuration: "tiny", "34m", "134m", "1.8b" or
// "32b".
func Preset(name string) (Config, error) {
	f, ok := presets[strings.ToLower(name)]
	if !ok {
		return Config{}, fmt.Errorf("model: unknown preset %q (have %s)", name, strings.Join(PresetNames(), ", "))
	}
	return f(), nil
}

// PresetNames lists the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FromWeights maps a checkpoint's Hugging Face config (already defaulted
// and validated by package weights) onto Config. Features the engine does
// not implement (biases, activations other than SiLU, RoPE types other than
// default and llama3) are errors rather than silent mismatches.
func FromWeights(h *weights.Config) (Config, error) {
	if h == nil {
		return Config{}, errors.New("model: checkpoint has no config")
	}
	if h.AttentionBias || h.MLPBias {
		return Config{}, errors.New("model config: attention/MLP biases are not supported")
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return Config{}, fmt.Errorf("model config: activation %q not supported (only silu)", h.HiddenAct)
	}
	c := Config{
		Hidden: h.HiddenSize, Layers: h.NumHiddenLayers, Heads: h.NumAttentionHeads,
		KVHeads: h.NumKeyValueHeads, HeadDim: h.HeadDim, FFN: h.IntermediateSize, Vocab: h.VocabSize,
		NormEps: float32(h.RMSNormEps), RopeTheta: h.RopeTheta, Context: h.MaxPositionEmbeddings,
		TiedEmbeddings: h.TieWordEmbeddings,
	}
	if r := h.RopeScaling; r != nil {
		switch r.RopeType {
		case "", "default":
		case "llama3":
			rs := *r
			c.RopeScaling = &rs
		default:
			return Config{}, fmt.Errorf("model config: rope type %q not supported (default, llama3)", r.RopeType)
		}
	}
	if len(h.LayerTypes) > 0 {
		if len(h.LayerTypes) != c.Layers {
			return Config{}, fmt.Errorf("model config: %d layer_types for %d layers", len(h.LayerTypes), c.Layers)
		}
		sliding := false
		ws := make([]int, c.Layers)
		for i, t := range h.LayerTypes {
			switch t {
			case weights.FullAttention:
			case weights.SlidingAttention:
				if h.SlidingWindow <= 0 {
					return Config{}, fmt.Errorf("model config: layer %d is sliding but sliding_window is unset", i)
				}
				ws[i] = h.SlidingWindow
				sliding = true
			default:
				return Config{}, fmt.Errorf("model config: layer %d has unknown type %q", i, t)
			}
		}
		if sliding {
			c.Windows = ws
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
