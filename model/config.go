package model

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ndbg/ndbg/weights"
)

// Config is the shape of a LLaMA-architecture decoder: everything the
// forward pass needs besides the weights themselves. It is the checkpoint's
// Hugging Face config.json as package weights parses and validates it (one
// type, one set of size checks); Check adds what this engine in particular
// computes.
type Config = weights.Config

// Check validates c with weights' checks and then refuses what the engine
// does not compute: an architecture other than LLaMA's and CWM's (by
// model_type and architectures: another one with LLaMA's tensor names,
// Mistral's sliding window over every layer, say, would load and compute
// something else), attention or MLP biases, activations other than SiLU,
// RoPE types other than default and llama3 (whose factor must be at least
// 1), and a rope_theta of 1 or less.
func Check(c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	switch c.ModelType {
	case "", "llama", "cwm":
	default:
		return fmt.Errorf("model config: model_type %q is not an architecture this engine computes (llama, cwm)", trunc(c.ModelType))
	}
	for _, a := range c.Architectures {
		if a != "LlamaForCausalLM" && a != "CwmForCausalLM" {
			return fmt.Errorf("model config: architectures names %q, not one this engine computes (LlamaForCausalLM, CwmForCausalLM)", trunc(a))
		}
	}
	if c.AttentionBias || c.MLPBias {
		return errors.New("model config: attention/MLP biases are not supported")
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return fmt.Errorf("model config: activation %q not supported (only silu)", c.HiddenAct)
	}
	if !(c.RopeTheta > 1) {
		return fmt.Errorf("model config: rope theta must be > 1, got %g", c.RopeTheta)
	}
	if s := c.RopeScaling; s != nil && s.RopeType != "default" {
		if s.RopeType != "llama3" {
			return fmt.Errorf("model config: rope type %q not supported (default, llama3)", s.RopeType)
		}
		if !(s.Factor >= 1) {
			return fmt.Errorf("model config: llama3 rope scaling factor %g is below 1", s.Factor)
		}
	}
	return nil
}

// trunc shortens a config's string for an error message.
func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// cwmLayers is CWM's attention pattern: layer i is global when i%4 == 0,
// the others see a sliding window.
func cwmLayers(layers int) []string {
	ts := make([]string, layers)
	for i := range ts {
		ts[i] = weights.FullAttention
		if i%4 != 0 {
			ts[i] = weights.SlidingAttention
		}
	}
	return ts
}

// presets are the named shapes. Each entry builds a fresh Config so callers
// can modify what they get.
var presets = map[string]func() Config{
	// tiny: a few-layer model for tests; GQA and a sliding layer so that
	// every code path runs.
	"tiny": func() Config {
		return Config{HiddenSize: 64, NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16,
			IntermediateSize: 128, VocabSize: 256, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 256,
			SlidingWindow: 16, LayerTypes: []string{weights.FullAttention, weights.SlidingAttention}}
	},
	// 34m and 134m match the random LLaMA models llama.cpp was measured
	// with on these machines (docs/environment.md), so tokens/s compare
	// directly.
	"34m": func() Config {
		return Config{HiddenSize: 512, NumHiddenLayers: 8, NumAttentionHeads: 8, NumKeyValueHeads: 8, HeadDim: 64, IntermediateSize: 1376, VocabSize: 8192,
			RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 2048}
	},
	"134m": func() Config {
		return Config{HiddenSize: 768, NumHiddenLayers: 12, NumAttentionHeads: 12, NumKeyValueHeads: 12, HeadDim: 64, IntermediateSize: 2048, VocabSize: 32000,
			RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 2048}
	},
	// 1.8b: the paper's "LLaMA-2 architecture, 1.8B" read with CWM's
	// tokenizer (docs/neural-debugger.md): about 1.76B parameters.
	"1.8b": func() Config {
		return Config{HiddenSize: 2048, NumHiddenLayers: 24, NumAttentionHeads: 16, NumKeyValueHeads: 16, HeadDim: 128, IntermediateSize: 5632, VocabSize: 128256,
			RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 4096}
	},
	// 32b: CWM (Hugging Face CwmConfig defaults).
	"32b": func() Config {
		return Config{HiddenSize: 6144, NumHiddenLayers: 64, NumAttentionHeads: 48, NumKeyValueHeads: 8, HeadDim: 128, IntermediateSize: 21504, VocabSize: 128256,
			RMSNormEps: 1e-5, RopeTheta: 1e6,
			RopeScaling:           &weights.RopeScaling{RopeType: "llama3", Factor: 16, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192},
			MaxPositionEmbeddings: 131072, SlidingWindow: 8192, LayerTypes: cwmLayers(64)}
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

// FromWeights returns a copy of a checkpoint's Hugging Face config (already
// defaulted and validated by package weights) after Check: features the
// engine does not implement are errors rather than silent mismatches.
func FromWeights(h *weights.Config) (Config, error) {
	if h == nil {
		return Config{}, errors.New("model: checkpoint has no config")
	}
	c := *h
	if h.RopeScaling != nil {
		rs := *h.RopeScaling
		c.RopeScaling = &rs
	}
	c.LayerTypes = append([]string(nil), h.LayerTypes...)
	c.Architectures = append([]string(nil), h.Architectures...)
	c.EOSTokenIDs = append([]int(nil), h.EOSTokenIDs...)
	if err := Check(&c); err != nil {
		return Config{}, err
	}
	return c, nil
}
