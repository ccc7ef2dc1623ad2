package model

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/sysmem"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/weights"
)

// randomSource is a complete random checkpoint of shape cfg, as a Source.
func randomSource(t *testing.T, cfg Config, dt weights.DType) mapSource {
	t.Helper()
	ts, err := weights.RandomLlama(&cfg, dt, 1)
	require.NoError(t, err)
	src := mapSource{}
	for i := range ts {
		src[ts[i].Name] = &ts[i]
	}
	return src
}

// A config whose few hundred kilobytes of weights pass every check but
// whose max_position_embeddings × head_dim asks for a 256 GiB RoPE table:
// New refuses it before allocating, naming the fields, where it used to
// die of Go's fatal out-of-memory inside the allocation.
func TestNewRefusesAConfigThatDoesNotFitInMemory(t *testing.T) {
	cfg := Config{HiddenSize: 8, IntermediateSize: 8, NumHiddenLayers: 1, NumAttentionHeads: 1, NumKeyValueHeads: 1,
		HeadDim: 4096, VocabSize: 16, MaxPositionEmbeddings: 1 << 24, RMSNormEps: 1e-5, RopeTheta: 10000}
	src := randomSource(t, cfg, weights.BF16)
	f := FootprintOf(&cfg, kernels.BF16, 0, 1)
	assert.EqualValues(t, int64(1<<24)*2048*2*4, f.Rope)
	if sysmem.Total() > f.Total() {
		t.Skipf("this machine has %d bytes of memory: the config would fit", sysmem.Total())
	}
	_, err := New(context.Background(), cfg, src, Options{Threads: 1})
	require.Error(t, err)
	assert.ErrorContains(t, err, "more than the")
	assert.ErrorContains(t, err, "of the memory of this machine")
	assert.ErrorContains(t, err, "a RoPE table of 256.0 GiB (max_position_embeddings 16777216 × head_dim 4096)")
	_, err = NewRandom(context.Background(), cfg, kernels.BF16, 1, Options{Threads: 1})
	assert.ErrorContains(t, err, "a RoPE table of 256.0 GiB")

	// A smaller context needs less: the same weights load.
	m, err := New(context.Background(), cfg, src, Options{Threads: 1, Context: 64})
	require.NoError(t, err)
	m.Close()
}

// Options.Memory bounds the model and one session at its full context
// together: the KV cache at the full context counts with the rest.
func TestNewChecksTheJointFootprint(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	src := randomSource(t, cfg, weights.F32)
	b := &binder{src: src, byName: map[string]*weights.Tensor{}}
	for _, s := range weights.LlamaTensors(&cfg) {
		b.tensor(s.Name, s.Shape...)
	}
	require.Empty(t, b.errs)
	copied, dt := b.copied(&cfg)
	assert.Equal(t, kernels.F32, dt)
	H, Q, KV, F, L := int64(cfg.HiddenSize), int64(cfg.QDim()), int64(cfg.KVDim()), int64(cfg.IntermediateSize), int64(cfg.NumHiddenLayers)
	assert.Equal(t, L*((Q+2*KV)*H+2*F*H)*4+(2*L+1)*H*4, copied, "fused QKV and gate/up in F32, the norms cloned")
	f := FootprintOf(&cfg, dt, copied, 1)
	kv := int64(cfg.MaxPositionEmbeddings) * L * 2 * KV * 4
	assert.GreaterOrEqual(t, f.Session, kv)

	_, err = New(context.Background(), cfg, src, Options{Threads: 1, Memory: f.Total() - 1})
	assert.ErrorContains(t, err, "of Options.Memory")
	m, err := New(context.Background(), cfg, src, Options{Threads: 1, Memory: f.Total()})
	require.NoError(t, err)
	m.Close()
	// BF16 weights are bound in place: only the fused matrices and norms
	// are copied, in BF16, and the KV cache is BF16.
	b = &binder{src: randomSource(t, cfg, weights.BF16), byName: map[string]*weights.Tensor{}}
	for _, s := range weights.LlamaTensors(&cfg) {
		b.tensor(s.Name, s.Shape...)
	}
	copied, dt = b.copied(&cfg)
	assert.Equal(t, kernels.BF16, dt)
	assert.Equal(t, L*((Q+2*KV)*H+2*F*H)*2+(2*L+1)*H*4, copied)
}

func TestSaturatingArithmetic(t *testing.T) {
	assert.Equal(t, int64(24), mulSat(2, 3, 4))
	assert.Equal(t, int64(1<<62), mulSat(1<<31, 1<<31))
	assert.Equal(t, int64(1<<63-1), mulSat(1<<32, 1<<32))
	assert.Equal(t, int64(0), mulSat(1<<40, 0, 1<<40))
	assert.Equal(t, int64(1<<63-1), addSat(1<<62, 1<<62))
	assert.Equal(t, "more than 8 EiB", bytesText(1<<63-1))
}
