package weights

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// llama31Config is Meta-Llama-3.1-8B's config.json (transformers 4.x).
const llama31Config = `{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 8.0,
    "low_freq_factor": 1.0,
    "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}`

func TestParseLlama31(t *testing.T) {
	c, err := ParseConfig([]byte(llama31Config))
	require.NoError(t, err)
	assert.Equal(t, 4096, c.HiddenSize)
	assert.Equal(t, 14336, c.IntermediateSize)
	assert.Equal(t, 32, c.NumHiddenLayers)
	assert.Equal(t, 8, c.NumKeyValueHeads)
	assert.Equal(t, 128, c.HeadDim, "derived from hidden_size / num_attention_heads")
	assert.Equal(t, 1024, c.KVDim())
	assert.Equal(t, 4096, c.QDim())
	assert.Equal(t, 1e-5, c.RMSNormEps)
	assert.Equal(t, 500000.0, c.RopeTheta)
	assert.Equal(t, &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, c.RopeScaling)
	assert.Equal(t, []int{128001, 128008, 128009}, c.EOSTokenIDs)
	require.NotNil(t, c.BOSTokenID)
	assert.Equal(t, 128000, *c.BOSTokenID)
	assert.Equal(t, "bfloat16", c.TorchDType)
	assert.Equal(t, "silu", c.HiddenAct)
	assert.Len(t, c.LayerTypes, 32)
	for i := range 32 {
		assert.Zero(t, c.Window(i))
	}
}

// cwmConfig is the 32B CWM shape (docs/neural-debugger.md) without layer_types,
// which must then follow CWM's 3:1 local/global pattern.
const cwmConfig = `{
  "architectures": ["CwmForCausalLM"], "model_type": "cwm",
  "hidden_size": 6144, "intermediate_size": 21504, "num_hidden_layers": 64,
  "num_attention_heads": 48, "num_key_value_heads": 8, "head_dim": 128,
  "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5,
  "rope_theta": 1000000.0,
  "rope_scaling": {"type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "sliding_window": 8192, "tie_word_embeddings": false,
  "bos_token_id": 128000, "eos_token_id": 128001, "pad_token_id": null
}`

func TestParseCWM(t *testing.T) {
	c, err := ParseConfig([]byte(cwmConfig))
	require.NoError(t, err)
	assert.Equal(t, "llama3", c.RopeScaling.RopeType, "older \"type\" key")
	assert.Equal(t, 16.0, c.RopeScaling.Factor)
	assert.Equal(t, []int{128001}, c.EOSTokenIDs)
	assert.Nil(t, c.PadTokenID)
	require.Len(t, c.LayerTypes, 64)
	for i := range 64 {
		if i%4 == 0 {
			assert.Equal(t, FullAttention, c.LayerTypes[i], "layer %d", i)
			assert.Zero(t, c.Window(i))
		} else {
			assert.Equal(t, SlidingAttention, c.LayerTypes[i], "layer %d", i)
			assert.Equal(t, 8192, c.Window(i))
		}
	}
}

// TestParseTransformers5 reads the transformers 5 spelling: rope_theta and
// scaling inside rope_parameters, and "dtype" instead of "torch_dtype".
func TestParseTransformers5(t *testing.T) {
	c, err := ParseConfig([]byte(`{"hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
	  "num_attention_heads": 16, "vocab_size": 128256, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
	  "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}, "dtype": "bfloat16",
	  "layer_types": ["full_attention","full_attention","full_attention","full_attention","full_attention","full_attention",
	    "full_attention","full_attention","full_attention","full_attention","full_attention","full_attention",
	    "full_attention","full_attention","full_attention","full_attention","full_attention","full_attention",
	    "full_attention","full_attention","full_attention","full_attention","full_attention","full_attention"],
	  "sliding_window": null}`))
	require.NoError(t, err)
	assert.Equal(t, 10000.0, c.RopeTheta)
	assert.Nil(t, c.RopeScaling)
	assert.Equal(t, "bfloat16", c.TorchDType)
	assert.Equal(t, 16, c.NumKeyValueHeads, "defaults to num_attention_heads")
	assert.Equal(t, 128, c.HeadDim)
	assert.Zero(t, c.SlidingWindow)

	c, err = ParseConfig([]byte(`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
	  "num_attention_heads": 4, "vocab_size": 256,
	  "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
	    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}}`))
	require.NoError(t, err)
	assert.Equal(t, 500000.0, c.RopeTheta)
	assert.Equal(t, &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}, c.RopeScaling)
	assert.Equal(t, 2048, c.MaxPositionEmbeddings, "Hugging Face default")
	assert.Equal(t, 1e-6, c.RMSNormEps, "Hugging Face default")
}

func TestConfigRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{llama31Config, cwmConfig} {
		c, err := ParseConfig([]byte(src))
		require.NoError(t, err)
		require.NoError(t, WriteConfig(dir, c))
		back, err := LoadConfig(dir)
		require.NoError(t, err)
		assert.Equal(t, c, back)
	}
}

func TestConfigRejectsImpossible(t *testing.T) {
	base := `"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256`
	for _, tc := range []struct{ name, json, want string }{
		{"bad JSON", `{"hidden_size": 64,`, "invalid JSON"},
		{"not an object", `[]`, "invalid JSON"},
		{"trailing data", `{` + base + `} {}`, "data after"},
		{"string size", `{"hidden_size": "64", "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}`, "invalid JSON"},
		{"missing hidden", `{"intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}`, "missing hidden_size"},
		{"missing vocab", `{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4}`, "missing vocab_size"},
		{"zero hidden", `{` + strings.Replace(base, `"hidden_size": 64`, `"hidden_size": 0`, 1) + `}`, "hidden_size is 0"},
		{"negative layers", `{` + strings.Replace(base, `"num_hidden_layers": 2`, `"num_hidden_layers": -1`, 1) + `}`, "num_hidden_layers is -1"},
		{"zero heads", `{` + strings.Replace(base, `"num_attention_heads": 4`, `"num_attention_heads": 0`, 1) + `}`, "num_attention_heads is 0"},
		{"heads do not divide hidden", `{` + strings.Replace(base, `"num_attention_heads": 4`, `"num_attention_heads": 5`, 1) + `}`, "hidden_size 64 is not divisible by num_attention_heads 5"},
		{"kv heads do not divide heads", `{` + base + `, "num_key_value_heads": 3}`, "num_attention_heads 4 is not divisible by num_key_value_heads 3"},
		{"zero kv heads", `{` + base + `, "num_key_value_heads": 0}`, "num_key_value_heads is 0"},
		{"odd head_dim", `{` + base + `, "head_dim": 15}`, "head_dim 15 must be even"},
		{"zero head_dim", `{` + base + `, "head_dim": 0}`, "head_dim is 0"},
		{"huge vocab", `{` + strings.Replace(base, `"vocab_size": 256`, `"vocab_size": 100000000`, 1) + `}`, "vocab_size is 100000000, above"},
		{"huge layers", `{` + strings.Replace(base, `"num_hidden_layers": 2`, `"num_hidden_layers": 100000000`, 1) + `}`, "num_hidden_layers is 100000000, above"},
		{"zero eps", `{` + base + `, "rms_norm_eps": 0}`, "rms_norm_eps is 0"},
		{"negative eps", `{` + base + `, "rms_norm_eps": -1e-5}`, "rms_norm_eps is -1e-05"},
		{"zero theta", `{` + base + `, "rope_theta": 0}`, "rope_theta is 0"},
		{"zero context", `{` + base + `, "max_position_embeddings": 0}`, "max_position_embeddings is 0"},
		{"rope without type", `{` + base + `, "rope_scaling": {"factor": 2.0}}`, "rope_scaling: missing rope_type"},
		{"rope unknown type", `{` + base + `, "rope_scaling": {"rope_type": "magic", "factor": 2.0}}`, `rope_type "magic" is not known`},
		{"linear without factor", `{` + base + `, "rope_scaling": {"rope_type": "linear"}}`, "rope_scaling.factor is 0"},
		{"llama3 low >= high", `{` + base + `, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, "high_freq_factor": 4, "original_max_position_embeddings": 8192}}`, "high_freq_factor 4 must exceed low_freq_factor 4"},
		{"llama3 no original", `{` + base + `, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4}}`, "original_max_position_embeddings is 0"},
		{"llama3 zero low", `{` + base + `, "rope_scaling": {"rope_type": "llama3", "factor": 8, "high_freq_factor": 4, "original_max_position_embeddings": 8192}}`, "low_freq_factor is 0"},
		{"negative window", `{` + base + `, "sliding_window": -4}`, "sliding_window is -4"},
		{"layer_types length", `{` + base + `, "layer_types": ["full_attention"]}`, "layer_types has 1 entries, num_hidden_layers is 2"},
		{"layer_types unknown", `{` + base + `, "layer_types": ["full_attention", "chunked_attention"]}`, `layer_types[1] is "chunked_attention"`},
		{"sliding without window", `{` + base + `, "layer_types": ["full_attention", "sliding_attention"]}`, "layer_types[1] is \"sliding_attention\" but sliding_window is not set"},
		{"eos out of vocab", `{` + base + `, "eos_token_id": [1, 256]}`, "eos_token_id 256 is outside the vocabulary [0, 256)"},
		{"eos wrong type", `{` + base + `, "eos_token_id": "x"}`, "eos_token_id: want an integer"},
		{"bos negative", `{` + base + `, "bos_token_id": -1}`, "bos_token_id -1 is outside"},
		{"pad out of vocab", `{` + base + `, "pad_token_id": 999}`, "pad_token_id 999 is outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.json))
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := ParseConfig([]byte(`{` + base + `}`))
	require.NoError(t, err, "the base config itself is valid")
}

func TestValidateCatchesHandBuilt(t *testing.T) {
	c := tinyConfig()
	require.NoError(t, c.Validate())
	c.NumKeyValueHeads = 3
	assert.ErrorContains(t, c.Validate(), "not divisible by num_key_value_heads 3")
	c = tinyConfig()
	c.LayerTypes = []string{FullAttention}
	assert.ErrorContains(t, c.Validate(), "layer_types has 1 entries")
	assert.ErrorContains(t, WriteConfig(t.TempDir(), c), "layer_types")
	c.LayerTypes = nil
	require.NoError(t, c.Validate(), "nil layer_types means all full attention")
	assert.Zero(t, c.Window(1))
}

func TestRopeParametersPerLayerType(t *testing.T) {
	base := `"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256,
	  "sliding_window": 8, "layer_types": ["full_attention", "sliding_attention"], `
	same := `{"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 16.0, "low_freq_factor": 1.0,
	  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`
	c, err := ParseConfig([]byte(`{` + base + `"rope_parameters": {"full_attention": ` + same + `, "sliding_attention": ` + same + `}}`))
	require.NoError(t, err)
	assert.Equal(t, 1e6, c.RopeTheta)
	assert.Equal(t, "llama3", c.RopeScaling.RopeType)
	assert.Equal(t, 8192, c.RopeScaling.OriginalMaxPositionEmbeddings)

	_, err = ParseConfig([]byte(`{` + base + `"rope_parameters": {"full_attention": ` + same +
		`, "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}`))
	assert.ErrorContains(t, err, "rope_parameters.sliding_attention differs from rope_parameters.full_attention")
	_, err = ParseConfig([]byte(`{` + base + `"rope_parameters": {"full_attention": 3}}`))
	assert.ErrorContains(t, err, "rope_parameters.full_attention: invalid JSON")
	_, err = ParseConfig([]byte(`{` + base + `"rope_parameters": [1]}`))
	assert.ErrorContains(t, err, "rope_parameters: invalid JSON")
}

func TestWriteConfigDefaultsModelType(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	c.ModelType, c.Architectures = "", nil
	require.NoError(t, WriteConfig(dir, c))
	assert.Empty(t, c.ModelType, "the caller's config is not modified")
	back, err := LoadConfig(dir)
	require.NoError(t, err)
	assert.Equal(t, "llama", back.ModelType)
	assert.Equal(t, []string{"LlamaForCausalLM"}, back.Architectures)
}
