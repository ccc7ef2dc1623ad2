package model

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/weights"
)

func tinyModel(t *testing.T, dt kernels.DType, ctxLen int) *Model {
	t.Helper()
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	if ctxLen > 0 {
		cfg.MaxPositionEmbeddings = ctxLen
	}
	m, err := NewRandom(context.Background(), cfg, dt, 7, Options{Threads: 2})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

func seq(n, vocab int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = (i*37 + 11) % vocab
	}
	return s
}

// decodeAll feeds tokens one at a time and returns every row of logits.
func decodeAll(t *testing.T, s *Session, tokens []int) [][]float32 {
	t.Helper()
	var rows [][]float32
	for _, tok := range tokens {
		l, err := s.Forward(context.Background(), []int{tok}, false)
		require.NoError(t, err)
		rows = append(rows, append([]float32(nil), l...))
	}
	return rows
}

// A prompt longer than one chunk, prefilled in one call, must give the same
// logits as feeding it token by token (which exercises the cache across
// block boundaries and the sliding layer of the tiny preset). Its first
// chunk (maxChunk rows of 64 or more) is large enough for forRows to split
// the row-wise ops over the model's two threads, which decode runs on one.
//
// In F32 the two agree to float32 rounding (NMSE ≤ 1e-10; measured 8e-13).
// A BF16 model keeps its K/V in BF16, rounded from prefill's and decode's
// float32 products, which differ in their last bits: now and then an
// element sits near a rounding boundary and lands on the neighbouring BF16
// value, one BF16 step (2⁻⁸ relative) apart. That moves the later logits
// more than float32 rounding does (measured worst NMSE 2.3e-8 over the 326
// positions; the BF16 cache as a whole moves them by about 5e-6 against the
// float64 reference fixtures), hence 1e-7 there.
func TestPrefillMatchesDecode(t *testing.T) {
	for _, c := range []struct {
		dt    kernels.DType
		limit float64
	}{{kernels.F32, 1e-10}, {kernels.BF16, 1e-7}} {
		t.Run(c.dt.String(), func(t *testing.T) {
			m := tinyModel(t, c.dt, 600)
			V := m.Config().VocabSize
			toks := seq(maxChunk+70, V)
			all, err := m.NewSession().Forward(context.Background(), toks, true)
			require.NoError(t, err)
			rows := decodeAll(t, m.NewSession(), toks)
			for i, r := range rows {
				require.LessOrEqual(t, nmse(all[i*V:(i+1)*V], r), c.limit, "position %d", i)
			}
		})
	}
}

// Forks share the prefix's blocks and copy the partly filled one on write,
// in F32 and BF16 caches alike.
func TestForkSharesPrefixAndDiverges(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) { testForkSharesPrefixAndDiverges(t, dt) })
	}
}

func testForkSharesPrefixAndDiverges(t *testing.T, dt kernels.DType) {
	m := tinyModel(t, dt, 0)
	V := m.Config().VocabSize
	prefix := seq(45, V) // ends inside a block, so forks copy-on-write it
	a, b := []int{1, 2, 3, 4, 5}, []int{9, 8, 7}

	base := m.NewSession()
	_, err := base.Forward(context.Background(), prefix, false)
	require.NoError(t, err)
	baseLast := append([]float32(nil), base.Last()...)

	fa, fb := base.Fork(), base.Fork()
	assert.Equal(t, baseLast, fa.Last())
	var wg sync.WaitGroup
	var ra, rb [][]float32
	wg.Add(2)
	go func() { defer wg.Done(); ra = decodeAll(t, fa, a) }()
	go func() { defer wg.Done(); rb = decodeAll(t, fb, b) }()
	wg.Wait()
	// The parent keeps going too, after its children wrote into copies.
	rp := decodeAll(t, base, b)

	want := func(suffix []int) [][]float32 {
		s := m.NewSession()
		_, err := s.Forward(context.Background(), prefix, false)
		require.NoError(t, err)
		return decodeAll(t, s, suffix)
	}
	assert.Equal(t, want(a), ra)
	assert.Equal(t, want(b), rb)
	assert.Equal(t, want(b), rp)
	assert.Equal(t, len(prefix)+len(a), fa.Len())
	assert.Equal(t, append(append([]int(nil), prefix...), a...), fa.Tokens())
	assert.Equal(t, append(append([]int(nil), prefix...), b...), fb.Tokens())
	assert.Equal(t, append(append([]int(nil), prefix...), b...), base.Tokens())
}

// Truncate rolls back, and later tokens overwrite the dropped positions,
// in F32 and BF16 caches alike.
func TestTruncateRollsBack(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) { testTruncateRollsBack(t, dt) })
	}
}

func testTruncateRollsBack(t *testing.T, dt kernels.DType) {
	m := tinyModel(t, dt, 0)
	V := m.Config().VocabSize
	toks := seq(70, V)
	s := m.NewSession()
	first := decodeAll(t, s, toks)
	require.NoError(t, s.Truncate(33))
	assert.Nil(t, s.Last())
	assert.Equal(t, toks[:33], s.Tokens())
	again := decodeAll(t, s, toks[33:])
	assert.Equal(t, first[33:], again)

	// Truncating a fork inside a shared block must not disturb the parent.
	f := s.Fork()
	require.NoError(t, f.Truncate(10))
	decodeAll(t, f, []int{3, 3, 3})
	s2 := m.NewSession()
	decodeAll(t, s2, toks[:69])
	require.NoError(t, s.Truncate(69))
	l1, err := s.Forward(context.Background(), []int{5}, false)
	require.NoError(t, err)
	l1 = append([]float32(nil), l1...)
	l2, err := s2.Forward(context.Background(), []int{5}, false)
	require.NoError(t, err)
	assert.Equal(t, l2, l1)

	assert.Error(t, s.Truncate(-1))
	assert.Error(t, s.Truncate(1000))
}

func TestForwardErrorsLeaveSessionUnchanged(t *testing.T) {
	m := tinyModel(t, kernels.F32, 64)
	s := m.NewSession()
	_, err := s.Forward(context.Background(), seq(10, 256), false)
	require.NoError(t, err)

	_, err = s.Forward(context.Background(), []int{1, 256}, false)
	assert.ErrorIs(t, err, ErrToken)
	_, err = s.Forward(context.Background(), []int{-1}, false)
	assert.ErrorIs(t, err, ErrToken)
	_, err = s.Forward(context.Background(), seq(55, 256), false)
	assert.ErrorIs(t, err, ErrContext)
	_, err = s.Forward(context.Background(), nil, false)
	assert.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Forward(ctx, []int{1, 2}, false)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 10, s.Len())
	assert.Equal(t, seq(10, 256), s.Tokens())

	// Exactly filling the context is fine.
	_, err = s.Forward(context.Background(), seq(54, 256), false)
	require.NoError(t, err)
	assert.Equal(t, 64, s.Len())
}

// mapSource is a Source over an in-memory tensor map.
type mapSource map[string]*weights.Tensor

func (m mapSource) Tensor(name string) (*weights.Tensor, error) {
	t, ok := m[name]
	if !ok {
		return nil, errors.New("not found")
	}
	return t, nil
}

func TestNewReportsMissingAndMisshapenTensors(t *testing.T) {
	cfg, err := Preset("tiny")
	require.NoError(t, err)
	cfg.NumHiddenLayers = 1
	cfg.LayerTypes = nil // every layer global
	src := mapSource{}
	add := func(name string, shape ...int) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		tn, err := weights.NewTensor(name, weights.F32, shape, make([]float32, n))
		require.NoError(t, err)
		src[name] = &tn
	}
	H, Q, KV, F, V := cfg.HiddenSize, cfg.QDim(), cfg.KVDim(), cfg.IntermediateSize, cfg.VocabSize
	layer := func(suffix string) string { return weights.LayerTensor(0, suffix) }
	add(weights.EmbedTokens, V, H)
	add(weights.LMHead, V, H)
	add(weights.FinalNorm, H)
	add(layer(weights.InputNorm), H)
	add(layer(weights.PostNorm), H)
	add(layer(weights.QProj), Q, H)
	add(layer(weights.KProj), KV, H)
	add(layer(weights.VProj), KV, H)
	add(layer(weights.OProj), H, Q)
	add(layer(weights.GateProj), F, H)
	add(layer(weights.UpProj), F, H)
	add(layer(weights.DownProj), H, F)
	m, err := New(context.Background(), cfg, src, Options{Threads: 1})
	require.NoError(t, err)
	m.Close()

	delete(src, layer(weights.UpProj))
	add(layer(weights.KProj), KV+1, H)
	_, err = New(context.Background(), cfg, src, Options{Threads: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "model.layers.0.mlp.up_proj.weight")
	assert.Contains(t, err.Error(), "model.layers.0.self_attn.k_proj.weight has shape [33 64], want [32 64]")
}

func TestPresets(t *testing.T) {
	for _, name := range PresetNames() {
		cfg, err := Preset(name)
		require.NoError(t, err)
		require.NoError(t, cfg.Validate(), name)
	}
	c, err := Preset("1.8b")
	require.NoError(t, err)
	assert.InDelta(t, 1.76e9, float64(c.Params()), 0.01e9)
	c, err = Preset("32b")
	require.NoError(t, err)
	assert.InDelta(t, 32.6e9, float64(c.Params()), 0.2e9)
	assert.Equal(t, 0, c.Window(0))
	assert.Equal(t, 8192, c.Window(1))
	assert.Equal(t, 0, c.Window(4))
	_, err = Preset("nope")
	assert.Error(t, err)
}

// A checkpoint with tensors the architecture does not use (here a q_proj
// bias) is refused instead of being run without them.
func TestLoadRejectsUnusedTensors(t *testing.T) {
	src := "testdata/mha_f32"
	ck, err := weights.Open(src)
	require.NoError(t, err)
	var ts []weights.Tensor
	for _, n := range ck.Names() {
		tn, err := ck.Tensor(n)
		require.NoError(t, err)
		ts = append(ts, weights.Tensor{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Data: append([]byte(nil), tn.Data...)})
	}
	bias, err := weights.NewTensor("model.layers.0.self_attn.q_proj.bias", weights.F32, []int{64}, make([]float32, 64))
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, weights.WriteCheckpoint(dir, ck.Config, append(ts, bias), 0, nil))
	require.NoError(t, ck.Close())
	_, err = Load(context.Background(), dir, Options{Threads: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "q_proj.bias")
}

// A checkpoint holding NaN or Inf weights is refused, naming each tensor
// (it loaded, and every logit came out NaN: "sample: no token allowed").
func TestLoadRejectsNonFiniteWeights(t *testing.T) {
	ck, err := weights.Open("testdata/mha_f32")
	require.NoError(t, err)
	defer ck.Close()
	bad := map[string]float32{
		"model.layers.0.mlp.down_proj.weight":    float32(math.NaN()),
		"model.layers.1.self_attn.k_proj.weight": float32(math.Inf(-1)),
	}
	var ts []weights.Tensor
	for _, n := range ck.Names() {
		tn, err := ck.Tensor(n)
		require.NoError(t, err)
		data := append([]byte(nil), tn.Data...)
		if v, ok := bad[n]; ok {
			require.Equal(t, weights.F32, tn.DType)
			binary.LittleEndian.PutUint32(data[4*7:], math.Float32bits(v))
		}
		ts = append(ts, weights.Tensor{Name: tn.Name, DType: tn.DType, Shape: tn.Shape, Data: data})
	}
	dir := t.TempDir()
	require.NoError(t, weights.WriteCheckpoint(dir, ck.Config, ts, 0, nil))
	_, err = Load(context.Background(), dir, Options{Threads: 1})
	require.Error(t, err)
	for n := range bad {
		assert.Contains(t, err.Error(), fmt.Sprintf("tensor %q holds a non-finite weight: element 7", n))
	}
}

// A new session's prompt runs in the activations of a closed session
// (a batch's step in those of a batch done): activations touched for the
// first time cost a page fault per 4 KiB, half of a 34m prefill's time on
// the benchmark machines.
func TestSessionsReuseActivations(t *testing.T) {
	m := tinyModel(t, kernels.F32, 0)
	prompt := seq(200, m.Config().VocabSize)
	first := func(s *Session) *float32 { return &s.seq.(*cpuSeq).act[ActX][0] }
	s1 := m.NewSession()
	_, err := s1.Forward(context.Background(), prompt, false)
	require.NoError(t, err)
	act := first(s1)
	require.NoError(t, s1.Close())
	s2 := m.NewSession()
	defer s2.Close()
	_, err = s2.Forward(context.Background(), prompt[:100], false)
	require.NoError(t, err)
	require.Same(t, act, first(s2), "the second session allocated activations of its own")
	s3 := m.NewSession() // nothing closed since: new activations
	defer s3.Close()
	_, err = s3.Forward(context.Background(), prompt[:100], false)
	require.NoError(t, err)
	require.NotSame(t, act, first(s3), "two live sessions share activations")
}
