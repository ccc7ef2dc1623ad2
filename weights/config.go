package weights

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Layer types named by Config.LayerTypes (Hugging Face spelling).
const (
	FullAttention    = "full_attention"
	SlidingAttention = "sliding_attention"
)

// Sanity bounds on sizes read from config.json. They are far above any
// LLaMA-family model and exist so that a hostile config cannot make a
// consumer allocate without limit or overflow size arithmetic.
const (
	maxDim       = 1 << 24 // hidden, intermediate, vocab, head_dim
	maxLayers    = 1 << 12
	maxHeads     = 1 << 12
	maxPositions = 1 << 24
	// maxConfigSize bounds config.json; real ones are a few kilobytes.
	maxConfigSize = 1 << 20
)

// Config holds the Hugging Face LlamaConfig fields this project uses (also
// the fields of CwmConfig, which adds sliding-window layers). After
// ParseConfig every derived default is filled in: NumKeyValueHeads, HeadDim
// and LayerTypes are always set.
type Config struct {
	Architectures         []string     `json:"architectures,omitempty"`
	ModelType             string       `json:"model_type,omitempty"`
	HiddenSize            int          `json:"hidden_size"`
	IntermediateSize      int          `json:"intermediate_size"`
	NumHiddenLayers       int          `json:"num_hidden_layers"`
	NumAttentionHeads     int          `json:"num_attention_heads"`
	NumKeyValueHeads      int          `json:"num_key_value_heads"`
	HeadDim               int          `json:"head_dim"`
	VocabSize             int          `json:"vocab_size"`
	MaxPositionEmbeddings int          `json:"max_position_embeddings"`
	RMSNormEps            float64      `json:"rms_norm_eps"`
	RopeTheta             float64      `json:"rope_theta"`
	RopeScaling           *RopeScaling `json:"rope_scaling"`
	TieWordEmbeddings     bool         `json:"tie_word_embeddings"`
	// SlidingWindow is the window of sliding_attention layers in tokens; 0
	// means no sliding window (JSON null or absent).
	SlidingWindow int `json:"sliding_window,omitempty"`
	// LayerTypes has one entry per layer, FullAttention or SlidingAttention.
	// ParseConfig always fills it in; nil in a hand-built Config means every
	// layer is full attention.
	LayerTypes    []string `json:"layer_types,omitempty"`
	BOSTokenID    *int     `json:"bos_token_id,omitempty"`
	EOSTokenIDs   []int    `json:"eos_token_id,omitempty"`
	PadTokenID    *int     `json:"pad_token_id,omitempty"`
	TorchDType    string   `json:"torch_dtype,omitempty"`
	HiddenAct     string   `json:"hidden_act,omitempty"`
	AttentionBias bool     `json:"attention_bias,omitempty"`
	MLPBias       bool     `json:"mlp_bias,omitempty"`
}

// RopeScaling is the rope_scaling object. RopeType is read from "rope_type"
// or the older "type" key.
type RopeScaling struct {
	RopeType                      string  `json:"rope_type"`
	Factor                        float64 `json:"factor,omitempty"`
	LowFreqFactor                 float64 `json:"low_freq_factor,omitempty"`
	HighFreqFactor                float64 `json:"high_freq_factor,omitempty"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings,omitempty"`
}

// rawConfig mirrors config.json with pointers so absent fields can be told
// from zero values, plus the alternative spellings used by other
// transformers versions.
type rawConfig struct {
	Architectures         []string        `json:"architectures"`
	ModelType             string          `json:"model_type"`
	HiddenSize            *int            `json:"hidden_size"`
	IntermediateSize      *int            `json:"intermediate_size"`
	NumHiddenLayers       *int            `json:"num_hidden_layers"`
	NumAttentionHeads     *int            `json:"num_attention_heads"`
	NumKeyValueHeads      *int            `json:"num_key_value_heads"`
	HeadDim               *int            `json:"head_dim"`
	VocabSize             *int            `json:"vocab_size"`
	MaxPositionEmbeddings *int            `json:"max_position_embeddings"`
	RMSNormEps            *float64        `json:"rms_norm_eps"`
	RopeTheta             *float64        `json:"rope_theta"`
	RopeScaling           *rawRope        `json:"rope_scaling"`
	RopeParameters        json.RawMessage `json:"rope_parameters"` // transformers >= 5
	TieWordEmbeddings     *bool           `json:"tie_word_embeddings"`
	SlidingWindow         *int            `json:"sliding_window"`
	LayerTypes            []string        `json:"layer_types"`
	BOSTokenID            *int            `json:"bos_token_id"`
	EOSTokenID            json.RawMessage `json:"eos_token_id"`
	PadTokenID            *int            `json:"pad_token_id"`
	TorchDType            string          `json:"torch_dtype"`
	DType                 string          `json:"dtype"` // transformers >= 5
	HiddenAct             string          `json:"hidden_act"`
	AttentionBias         bool            `json:"attention_bias"`
	MLPBias               bool            `json:"mlp_bias"`
}

type rawRope struct {
	RopeType                      string   `json:"rope_type"`
	Type                          string   `json:"type"`
	RopeTheta                     *float64 `json:"rope_theta"`
	Factor                        *float64 `json:"factor"`
	LowFreqFactor                 *float64 `json:"low_freq_factor"`
	HighFreqFactor                *float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings *int     `json:"original_max_position_embeddings"`
}

// LoadConfig reads and validates dir/config.json.
func LoadConfig(dir string) (*Config, error) { return loadConfig(dirSource(dir)) }

// loadConfig reads and validates src's config.json.
func loadConfig(src source) (*Config, error) {
	path := src.path(ConfigName)
	data, err := src.read(ConfigName, maxConfigSize)
	if err != nil {
		return nil, err
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes a config.json, fills in the defaults Hugging Face
// would (num_key_value_heads = num_attention_heads, head_dim = hidden_size /
// num_attention_heads, rms_norm_eps 1e-6, rope_theta 10000,
// max_position_embeddings 2048, all layers full attention unless the model
// is CWM, whose layer i is global when i % 4 == 0) and validates the result.
// Required sizes have no default: a config without them is rejected.
func ParseConfig(data []byte) (*Config, error) {
	var r rawConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("config: invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("config: data after the JSON object")
	}
	c := &Config{
		Architectures: r.Architectures,
		ModelType:     r.ModelType,
		LayerTypes:    r.LayerTypes,
		BOSTokenID:    r.BOSTokenID,
		PadTokenID:    r.PadTokenID,
		TorchDType:    r.TorchDType,
		HiddenAct:     r.HiddenAct,
		AttentionBias: r.AttentionBias,
		MLPBias:       r.MLPBias,
	}
	if c.TorchDType == "" {
		c.TorchDType = r.DType
	}
	required := []struct {
		name string
		src  *int
		dst  *int
	}{
		{"hidden_size", r.HiddenSize, &c.HiddenSize},
		{"intermediate_size", r.IntermediateSize, &c.IntermediateSize},
		{"num_hidden_layers", r.NumHiddenLayers, &c.NumHiddenLayers},
		{"num_attention_heads", r.NumAttentionHeads, &c.NumAttentionHeads},
		{"vocab_size", r.VocabSize, &c.VocabSize},
	}
	for _, f := range required {
		if f.src == nil {
			return nil, fmt.Errorf("config: missing %s", f.name)
		}
		*f.dst = *f.src
	}
	c.NumKeyValueHeads = orInt(r.NumKeyValueHeads, c.NumAttentionHeads)
	c.MaxPositionEmbeddings = orInt(r.MaxPositionEmbeddings, 2048)
	c.RMSNormEps = orFloat(r.RMSNormEps, 1e-6)
	c.RopeTheta = orFloat(r.RopeTheta, 10000)
	c.SlidingWindow = orInt(r.SlidingWindow, 0)
	if r.TieWordEmbeddings != nil {
		c.TieWordEmbeddings = *r.TieWordEmbeddings
	}
	if r.HeadDim != nil {
		c.HeadDim = *r.HeadDim
	} else {
		if c.NumAttentionHeads <= 0 {
			return nil, fmt.Errorf("config: num_attention_heads is %d, must be positive", c.NumAttentionHeads)
		}
		if c.HiddenSize%c.NumAttentionHeads != 0 {
			return nil, fmt.Errorf("config: hidden_size %d is not divisible by num_attention_heads %d (and head_dim is not given)",
				c.HiddenSize, c.NumAttentionHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	eos, err := parseTokenIDs(r.EOSTokenID)
	if err != nil {
		return nil, fmt.Errorf("config: eos_token_id: %w", err)
	}
	if len(eos) > 0 {
		c.EOSTokenIDs = eos
	}
	if len(c.Architectures) == 0 {
		c.Architectures = nil
	}
	params, err := parseRopeParameters(r.RopeParameters)
	if err != nil {
		return nil, err
	}
	if err := c.applyRope(r.RopeScaling, params); err != nil {
		return nil, err
	}
	if c.LayerTypes == nil && c.NumHiddenLayers > 0 && c.NumHiddenLayers <= maxLayers {
		c.LayerTypes = make([]string, c.NumHiddenLayers)
		for i := range c.LayerTypes {
			c.LayerTypes[i] = FullAttention
			if c.ModelType == "cwm" && c.SlidingWindow > 0 && i%4 != 0 {
				c.LayerTypes[i] = SlidingAttention
			}
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// applyRope merges rope_scaling (transformers 4) and rope_parameters
// (transformers 5, which also carries rope_theta) into c.
func (c *Config) applyRope(scaling, params *rawRope) error {
	for _, src := range []struct {
		key string
		r   *rawRope
	}{{"rope_scaling", scaling}, {"rope_parameters", params}} {
		r := src.r
		if r == nil {
			continue
		}
		if r.RopeTheta != nil {
			c.RopeTheta = *r.RopeTheta
		}
		typ := r.RopeType
		if typ == "" {
			typ = r.Type
		}
		if typ == "" {
			return fmt.Errorf("config: %s: missing rope_type", src.key)
		}
		if typ == "default" {
			c.RopeScaling = nil // plain RoPE, e.g. {"rope_type": "default", "rope_theta": ...}
			continue
		}
		c.RopeScaling = &RopeScaling{
			RopeType:                      typ,
			Factor:                        orFloat(r.Factor, 0),
			LowFreqFactor:                 orFloat(r.LowFreqFactor, 0),
			HighFreqFactor:                orFloat(r.HighFreqFactor, 0),
			OriginalMaxPositionEmbeddings: orInt(r.OriginalMaxPositionEmbeddings, 0),
		}
	}
	return nil
}

// parseRopeParameters decodes transformers 5's rope_parameters: either one
// object, or one object per layer type ({"full_attention": {...},
// "sliding_attention": {...}}), which is accepted only when all are equal
// because this project applies one RoPE to every layer.
func parseRopeParameters(raw json.RawMessage) (*rawRope, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var byType map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byType); err != nil {
		return nil, fmt.Errorf("config: rope_parameters: invalid JSON: %w", err)
	}
	_, full := byType[FullAttention]
	_, sliding := byType[SlidingAttention]
	if !full && !sliding {
		var r rawRope
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("config: rope_parameters: invalid JSON: %w", err)
		}
		return &r, nil
	}
	var first *rawRope
	var firstKey string
	for _, key := range []string{FullAttention, SlidingAttention} {
		sub, ok := byType[key]
		if !ok {
			continue
		}
		var r rawRope
		if err := json.Unmarshal(sub, &r); err != nil {
			return nil, fmt.Errorf("config: rope_parameters.%s: invalid JSON: %w", key, err)
		}
		if first == nil {
			first, firstKey = &r, key
		} else if !r.equal(first) {
			return nil, fmt.Errorf("config: rope_parameters.%s differs from rope_parameters.%s; per-layer-type RoPE is not supported",
				key, firstKey)
		}
	}
	return first, nil
}

func (r *rawRope) equal(o *rawRope) bool {
	eqF := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	eqI := func(a, b *int) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	return r.RopeType == o.RopeType && r.Type == o.Type && eqF(r.RopeTheta, o.RopeTheta) &&
		eqF(r.Factor, o.Factor) && eqF(r.LowFreqFactor, o.LowFreqFactor) &&
		eqF(r.HighFreqFactor, o.HighFreqFactor) && eqI(r.OriginalMaxPositionEmbeddings, o.OriginalMaxPositionEmbeddings)
}

// parseTokenIDs accepts null, one integer or a list of integers.
func parseTokenIDs(raw json.RawMessage) ([]int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("want an integer or a list of integers")
	}
	return many, nil
}

// Validate rejects impossible or unusable values, naming the field.
func (c *Config) Validate() error {
	positive := []struct {
		name string
		v    int
		max  int
	}{
		{"hidden_size", c.HiddenSize, maxDim},
		{"intermediate_size", c.IntermediateSize, maxDim},
		{"num_hidden_layers", c.NumHiddenLayers, maxLayers},
		{"num_attention_heads", c.NumAttentionHeads, maxHeads},
		{"num_key_value_heads", c.NumKeyValueHeads, maxHeads},
		{"head_dim", c.HeadDim, maxDim},
		{"vocab_size", c.VocabSize, maxDim},
		{"max_position_embeddings", c.MaxPositionEmbeddings, maxPositions},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return fmt.Errorf("config: %s is %d, must be positive", f.name, f.v)
		}
		if f.v > f.max {
			return fmt.Errorf("config: %s is %d, above the supported maximum %d", f.name, f.v, f.max)
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return fmt.Errorf("config: num_attention_heads %d is not divisible by num_key_value_heads %d",
			c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("config: head_dim %d must be even for rotary embeddings", c.HeadDim)
	}
	if c.NumAttentionHeads*c.HeadDim > maxDim {
		return fmt.Errorf("config: num_attention_heads * head_dim = %d, above the supported maximum %d",
			c.NumAttentionHeads*c.HeadDim, maxDim)
	}
	if !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0) {
		return fmt.Errorf("config: rms_norm_eps is %g, must be positive and finite", c.RMSNormEps)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("config: rope_theta is %g, must be positive and finite", c.RopeTheta)
	}
	if err := c.RopeScaling.Validate(); err != nil {
		return err
	}
	if c.SlidingWindow < 0 {
		return fmt.Errorf("config: sliding_window is %d, must be positive (or null for none)", c.SlidingWindow)
	}
	if c.LayerTypes != nil && len(c.LayerTypes) != c.NumHiddenLayers {
		return fmt.Errorf("config: layer_types has %d entries, num_hidden_layers is %d", len(c.LayerTypes), c.NumHiddenLayers)
	}
	for i, t := range c.LayerTypes {
		switch t {
		case FullAttention:
		case SlidingAttention:
			if c.SlidingWindow <= 0 {
				return fmt.Errorf("config: layer_types[%d] is %q but sliding_window is not set", i, t)
			}
		default:
			return fmt.Errorf("config: layer_types[%d] is %q, want %q or %q", i, truncate(t, 32), FullAttention, SlidingAttention)
		}
	}
	ids := []struct {
		name string
		v    *int
	}{{"bos_token_id", c.BOSTokenID}, {"pad_token_id", c.PadTokenID}}
	for i := range c.EOSTokenIDs {
		ids = append(ids, struct {
			name string
			v    *int
		}{"eos_token_id", &c.EOSTokenIDs[i]})
	}
	for _, id := range ids {
		if id.v != nil && (*id.v < 0 || *id.v >= c.VocabSize) {
			return fmt.Errorf("config: %s %d is outside the vocabulary [0, %d)", id.name, *id.v, c.VocabSize)
		}
	}
	return nil
}

// Validate rejects impossible rope_scaling values for its rope type, naming
// the field; a nil RopeScaling (none) is valid.
func (r *RopeScaling) Validate() error {
	if r == nil {
		return nil
	}
	finitePos := func(name string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("config: rope_scaling.%s is %g, must be positive and finite", name, v)
		}
		return nil
	}
	switch r.RopeType {
	case "default":
		return nil
	case "linear", "dynamic", "yarn", "longrope":
		return finitePos("factor", r.Factor)
	case "llama3":
		if err := finitePos("factor", r.Factor); err != nil {
			return err
		}
		if err := finitePos("low_freq_factor", r.LowFreqFactor); err != nil {
			return err
		}
		if err := finitePos("high_freq_factor", r.HighFreqFactor); err != nil {
			return err
		}
		if r.HighFreqFactor <= r.LowFreqFactor {
			return fmt.Errorf("config: rope_scaling.high_freq_factor %g must exceed low_freq_factor %g",
				r.HighFreqFactor, r.LowFreqFactor)
		}
		if r.OriginalMaxPositionEmbeddings <= 0 || r.OriginalMaxPositionEmbeddings > maxPositions {
			return fmt.Errorf("config: rope_scaling.original_max_position_embeddings is %d, must be in [1, %d]",
				r.OriginalMaxPositionEmbeddings, maxPositions)
		}
		return nil
	}
	return fmt.Errorf("config: rope_scaling.rope_type %q is not known", truncate(r.RopeType, 32))
}

// KVDim returns num_key_value_heads * head_dim, the width of K and V.
func (c *Config) KVDim() int { return c.NumKeyValueHeads * c.HeadDim }

// QDim returns num_attention_heads * head_dim, the width of Q.
func (c *Config) QDim() int { return c.NumAttentionHeads * c.HeadDim }

// Window returns the attention window of layer i in tokens, or 0 for full
// attention.
func (c *Config) Window(i int) int {
	if i >= 0 && i < len(c.LayerTypes) && c.LayerTypes[i] == SlidingAttention {
		return c.SlidingWindow
	}
	return 0
}

// Params returns the number of parameters of the LLaMA decoder c describes
// (the output head counted once when tied).
func (c *Config) Params() int64 {
	h, q, kv, f := int64(c.HiddenSize), int64(c.QDim()), int64(c.KVDim()), int64(c.IntermediateSize)
	perLayer := h*q + 2*h*kv + q*h + 3*h*f + 2*h
	n := int64(c.NumHiddenLayers)*perLayer + int64(c.VocabSize)*h + h
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}

// WriteConfig writes c as dir/config.json after validating it. An empty
// model_type is written as "llama" and empty architectures as
// ["LlamaForCausalLM"], so that transformers' AutoConfig and
// AutoModelForCausalLM accept the directory; c itself is not modified.
func WriteConfig(dir string, c *Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	out := *c
	if out.ModelType == "" {
		out.ModelType = "llama"
	}
	if len(out.Architectures) == 0 {
		out.Architectures = []string{"LlamaForCausalLM"}
	}
	data, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("weights: encode config: %w", err)
	}
	path := filepath.Join(dir, ConfigName)
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}

func orInt(p *int, def int) int {
	if p != nil {
		return *p
	}
	return def
}

func orFloat(p *float64, def float64) float64 {
	if p != nil {
		return *p
	}
	return def
}
