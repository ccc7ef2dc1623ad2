package weights

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLlamaTensorsCount(t *testing.T) {
	c := tinyConfig()
	assert.Len(t, LlamaTensors(c), 1+2*9+1+1)
	c.TieWordEmbeddings = true
	assert.Len(t, LlamaTensors(c), 1+2*9+1)
	c.AttentionBias, c.MLPBias = true, true
	assert.Len(t, LlamaTensors(c), 1+2*16+1)

	// The 1.8B config of docs/neural-debugger.md: about 1.76B parameters.
	big := &Config{HiddenSize: 2048, IntermediateSize: 5632, NumHiddenLayers: 24, NumAttentionHeads: 16,
		NumKeyValueHeads: 16, HeadDim: 128, VocabSize: 128256, MaxPositionEmbeddings: 4096, RMSNormEps: 1e-5, RopeTheta: 10000}
	require.NoError(t, big.Validate())
	params := 0
	for _, s := range LlamaTensors(big) {
		n, _ := numElements(s.Shape)
		params += n
	}
	assert.InDelta(t, 1.76e9, float64(params), 0.01e9)
}

func TestRandomLlamaPassesCheck(t *testing.T) {
	for _, dt := range []DType{F32, BF16} {
		dir := t.TempDir()
		c := tinyConfig()
		tensors, err := RandomLlama(c, dt, 42)
		require.NoError(t, err)
		again, err := RandomLlama(c, dt, 42)
		require.NoError(t, err)
		assert.Equal(t, tensors, again, "deterministic for a seed")
		require.NoError(t, WriteCheckpoint(dir, c, tensors, 1024, nil))
		ck, err := Open(dir)
		require.NoError(t, err)
		require.NoError(t, CheckLlama(ck))
		assert.Empty(t, ck.Unused())
		norm, err := ck.Require("model.norm.weight", 16)
		require.NoError(t, err)
		v, err := norm.F32()
		require.NoError(t, err)
		assert.InDelta(t, 1, v[0], 0.5)
		require.NoError(t, ck.Close())
	}
}

func TestCheckLlamaListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	c := tinyConfig()
	tensors, err := RandomLlama(c, F32, 1)
	require.NoError(t, err)
	var kept []Tensor
	for _, tt := range tensors {
		switch tt.Name {
		case "model.layers.1.mlp.up_proj.weight":
			continue // missing
		case "model.layers.0.self_attn.k_proj.weight":
			tt, err = NewTensor(tt.Name, F32, []int{4, 16}, make([]float32, 64)) // wrong shape
			require.NoError(t, err)
		}
		kept = append(kept, tt)
	}
	extra, err := NewTensor("model.layers.0.self_attn.rotary_emb.inv_freq", F32, []int{2}, []float32{1, 2})
	require.NoError(t, err)
	kept = append(kept, extra)
	require.NoError(t, WriteCheckpoint(dir, c, kept, 0, nil))
	ck, err := Open(dir)
	require.NoError(t, err)
	defer ck.Close()
	err = CheckLlama(ck)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `missing tensor "model.layers.1.mlp.up_proj.weight"`)
	assert.Contains(t, err.Error(), `tensor "model.layers.0.self_attn.k_proj.weight" has shape [4 16], want [8 16]`)
	assert.Contains(t, err.Error(), "does not use: model.layers.0.self_attn.rotary_emb.inv_freq")

	noCfg, err := OpenTensors(dir)
	require.NoError(t, err)
	defer noCfg.Close()
	assert.ErrorContains(t, CheckLlama(noCfg), "no config")
}
