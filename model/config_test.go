package model

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/weights"
)

// TestConfigRopeScalingIsTheCheckpoints: FromWeights keeps config.json's
// llama3 rope_scaling as it is (one type, weights.RopeScaling), refuses
// the rope types the engine does not compute, and Check checks a
// hand-built one with weights' own checks.
func TestConfigRopeScalingIsTheCheckpoints(t *testing.T) {
	cfgJSON := `{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
		"num_attention_heads": 2, "vocab_size": 64, "max_position_embeddings": 128,
		"rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, "high_freq_factor": 4,
		"original_max_position_embeddings": 64}}`
	h, err := weights.ParseConfig([]byte(cfgJSON))
	require.NoError(t, err)
	c, err := FromWeights(h)
	require.NoError(t, err)
	require.Equal(t, *h.RopeScaling, *c.RopeScaling)
	require.NotSame(t, h.RopeScaling, c.RopeScaling, "the model's config is its own copy")

	h.RopeScaling = &weights.RopeScaling{RopeType: "yarn", Factor: 2}
	_, err = FromWeights(h)
	require.ErrorContains(t, err, `rope type "yarn" not supported`)

	c.RopeScaling = &weights.RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 4, HighFreqFactor: 1, OriginalMaxPositionEmbeddings: 64}
	require.ErrorContains(t, Check(&c), "high_freq_factor 1 must exceed low_freq_factor 4")
	c.RopeScaling = &weights.RopeScaling{RopeType: "llama3", Factor: 0.5, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}
	require.ErrorContains(t, Check(&c), "below 1")
	c.RopeScaling = &weights.RopeScaling{RopeType: "linear", Factor: 2}
	require.ErrorContains(t, Check(&c), `rope type "linear" not supported`)
}

// TestPresetsAreValidCheckpointConfigs: a preset is a weights.Config like
// any checkpoint's, passes weights' checks and the engine's, and states its
// sliding layers the Hugging Face way (CWM: layer i global when i%4 == 0).
func TestPresetsAreValidCheckpointConfigs(t *testing.T) {
	for _, name := range PresetNames() {
		c, err := Preset(name)
		require.NoError(t, err)
		require.NoError(t, Check(&c), name)
	}
	c, err := Preset("32b")
	require.NoError(t, err)
	for l := 0; l < c.NumHiddenLayers; l++ {
		want := 8192
		if l%4 == 0 {
			want = 0
		}
		require.Equal(t, want, c.Window(l), "layer %d", l)
	}
}
