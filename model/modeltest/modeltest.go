// Package modeltest is the conformance suite of model.Device: the same
// cases run on the CPU (package model's tests) and on a GPU (package
// cuda's tests, build tag cuda). Each case runs one forward pass on the
// device under test and on the pure-Go reference kernels
// (model.NewCPUWith(kernels.Generic(), 1)) over the same random weights,
// and compares the logits. That reference is itself checked against
// PyTorch (model's reference_test.go), so the suite finds where a device
// departs from the one forward pass: on the CPU, a kernels implementation;
// on a GPU, any op, the KV cache, Fork and Truncate.
package modeltest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/kernels/kerneltest"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/weights"
)

// MaxNMSE is the largest normalised mean squared error of a device's
// logits against the reference that Run accepts. Every kernel is float32
// accurate, so a conforming device is far below it; a wrong op (a missed
// RoPE, a window off by one, a stale cache row) is far above.
const MaxNMSE = 1e-3

// Run runs every case on dev, which the suite does not close.
func Run(t *testing.T, dev model.Device) {
	for _, c := range Configs() {
		t.Run(c.Name, func(t *testing.T) { Sequence(t, dev, c) })
		t.Run("batch-"+c.Name, func(t *testing.T) { Batch(t, dev, c) })
	}
	t.Run("concurrent", func(t *testing.T) { Concurrent(t, dev) })
}

// Case is one model shape and weight type.
type Case struct {
	Name  string
	Cfg   model.Config
	DType kernels.DType
	// Mix, when set, quantizes the weights as llama.cpp's llama-quantize
	// does for that mix (model.NewRandomQuant), DType unused.
	Mix string
}

// QuantConfigs are the quantized cases: the shapes of Configs with Q8_0
// weights, and with llama.cpp's Q4_K_M mix (Q4_K, Q6_K for the head and
// some v and down projections, fused projections of mixed types).
func QuantConfigs() []Case {
	c := Configs()
	return []Case{{Name: "q8_0", Cfg: c[0].Cfg, Mix: "q8_0"}, {Name: "q4_k_m-tied", Cfg: c[1].Cfg, Mix: "q4_k_m"}}
}

// RunQuant runs every case on dev with quantized weights (QuantConfigs):
// the devices that compute them (the CPU) run it beside Run.
func RunQuant(t *testing.T, dev model.Device) {
	for _, c := range QuantConfigs() {
		t.Run(c.Name, func(t *testing.T) { Sequence(t, dev, c) })
		t.Run("batch-"+c.Name, func(t *testing.T) { Batch(t, dev, c) })
	}
}

// Configs are the shapes the suite covers: GQA, a sliding-window layer,
// llama3 RoPE scaling, BF16 weights with an untied head and F32 weights
// with a tied one.
func Configs() []Case {
	base := model.Config{HiddenSize: 256, NumHiddenLayers: 3, NumAttentionHeads: 8, NumKeyValueHeads: 2, HeadDim: 32, IntermediateSize: 512, VocabSize: 1000,
		RMSNormEps: 1e-5, RopeTheta: 500000, MaxPositionEmbeddings: 1024,
		SlidingWindow: 40, LayerTypes: []string{weights.FullAttention, weights.SlidingAttention, weights.FullAttention},
		RopeScaling: &weights.RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 64}}
	tied := base
	tied.TieWordEmbeddings = true
	return []Case{{Name: "bf16", Cfg: base, DType: kernels.BF16}, {Name: "f32-tied", Cfg: tied, DType: kernels.F32}}
}

// pair is the reference model and the same weights on the device under test.
func pair(t *testing.T, dev model.Device, c Case, seed uint64) (ref, dut *model.Model) {
	var err error
	t.Helper()
	refDev := model.NewCPUWith(kernels.Generic(), 1)
	t.Cleanup(func() { refDev.Close() })
	if c.Mix != "" {
		ref, err = model.NewRandomQuant(context.Background(), c.Cfg, c.Mix, seed, model.Options{Device: refDev})
	} else {
		ref, err = model.NewRandom(context.Background(), c.Cfg, c.DType, seed, model.Options{Device: refDev})
	}
	require.NoError(t, err)
	t.Cleanup(func() { ref.Close() })
	dut, err = ref.WithDevice(dev)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dut.Close()) })
	return ref, dut
}

func compare(t *testing.T, what string, got, want []float32) {
	t.Helper()
	require.Len(t, got, len(want), what)
	ref := make([]float64, len(want))
	for i, v := range want {
		ref[i] = float64(v)
	}
	e, ok, first := kerneltest.NMSE(got, ref)
	require.True(t, ok, "%s: logit %d is not finite", what, first)
	t.Logf("%s: NMSE %.3g", what, e)
	require.LessOrEqual(t, e, MaxNMSE, what)
}

// Sequence runs one session's life on both models: a prefill longer than
// a chunk (every row's logits), greedy decode steps, a Fork rolled back
// into the sliding window and continued, the parent continued after the
// fork, and a failed forward that must leave the session as it was.
func Sequence(t *testing.T, dev model.Device, c Case) {
	ctx := context.Background()
	ref, dut := pair(t, dev, c, 11)
	r := rand.New(rand.NewPCG(12, 13))
	prompt := make([]int, 300) // more than one 256-token chunk
	for i := range prompt {
		prompt[i] = r.IntN(c.Cfg.VocabSize)
	}
	rs, ds := ref.NewSession(), dut.NewSession()
	defer func() { require.NoError(t, ds.Close()) }()
	step := func(what string, rs, ds *model.Session, tokens []int, all bool) []float32 {
		t.Helper()
		want, err := rs.Forward(ctx, tokens, all)
		require.NoError(t, err, what)
		got, err := ds.Forward(ctx, tokens, all)
		require.NoError(t, err, what)
		compare(t, what, got, want)
		require.Equal(t, rs.Tokens(), ds.Tokens(), what)
		return want
	}
	l := step("prefill", rs, ds, prompt, true)
	tok := sample.Argmax(l[len(l)-c.Cfg.VocabSize:])
	for i := range 6 {
		tok = sample.Argmax(step(fmt.Sprintf("decode %d", i), rs, ds, []int{tok}, false))
	}

	rf, df := rs.Fork(), ds.Fork()
	defer func() { require.NoError(t, df.Close()) }()
	require.NoError(t, rf.Truncate(280))
	require.NoError(t, df.Truncate(280))
	step("fork truncated into the window", rf, df, prompt[:30], false)
	step("parent after the fork", rs, ds, []int{tok}, false)

	// A token outside the vocabulary fails before any work; a sequence
	// past the context fails too; neither changes the session.
	n := ds.Len()
	_, err := ds.Forward(ctx, []int{1, c.Cfg.VocabSize}, false)
	require.ErrorIs(t, err, model.ErrToken)
	_, err = ds.Forward(ctx, make([]int, c.Cfg.MaxPositionEmbeddings), false)
	require.ErrorIs(t, err, model.ErrContext)
	require.Equal(t, n, ds.Len())
	step("after refused input", rs, ds, []int{tok}, false)
}

// Batch decodes sessions of different lengths together with
// model.DecodeBatch on the device under test (a device without batches
// steps them in turn): a fresh session, one shorter than a cache block,
// one past the sliding window, a fork of it and a fork rolled back into
// the window, each against the same session decoding alone on the
// reference.
func Batch(t *testing.T, dev model.Device, c Case) {
	ctx := context.Background()
	ref, dut := pair(t, dev, c, 21)
	r := rand.New(rand.NewPCG(22, 23))
	tokens := func(n int) []int {
		p := make([]int, n)
		for i := range p {
			p[i] = r.IntN(c.Cfg.VocabSize)
		}
		return p
	}
	type pairSession struct{ ref, dut *model.Session }
	var ss []pairSession
	for _, n := range []int{0, 5, 70} {
		p := pairSession{ref.NewSession(), dut.NewSession()}
		if n > 0 {
			prompt := tokens(n)
			_, err := p.ref.Forward(ctx, prompt, false)
			require.NoError(t, err)
			_, err = p.dut.Forward(ctx, prompt, false)
			require.NoError(t, err)
		}
		ss = append(ss, p)
	}
	long := ss[2]
	ss = append(ss, pairSession{long.ref.Fork(), long.dut.Fork()})
	back := pairSession{long.ref.Fork(), long.dut.Fork()}
	require.NoError(t, back.ref.Truncate(50))
	require.NoError(t, back.dut.Truncate(50))
	ss = append(ss, back)
	t.Cleanup(func() {
		for _, p := range ss {
			require.NoError(t, p.dut.Close())
		}
	})
	next := tokens(len(ss))
	for step := range 4 {
		sessions := make([]*model.Session, len(ss))
		for i, p := range ss {
			sessions[i] = p.dut
		}
		got, err := model.DecodeBatch(ctx, sessions, next)
		require.NoError(t, err)
		require.Len(t, got, len(ss))
		for i, p := range ss {
			want, err := p.ref.Forward(ctx, next[i:i+1], false)
			require.NoError(t, err)
			what := fmt.Sprintf("step %d session %d", step, i)
			compare(t, what, got[i], want)
			require.Equal(t, p.ref.Tokens(), p.dut.Tokens(), what)
			require.Equal(t, got[i], p.dut.Last(), what)
			next[i] = sample.Argmax(want)
		}
	}
}

// Concurrent runs sessions of one model from several goroutines (a Device
// must be safe for concurrent use) and checks that each gets the logits
// it gets alone, bit for bit.
func Concurrent(t *testing.T, dev model.Device) {
	ctx := context.Background()
	cfg, err := model.Preset("tiny")
	require.NoError(t, err)
	_, m := pair(t, dev, Case{Name: "tiny", Cfg: cfg, DType: kernels.BF16}, 3)
	prompts := [][]int{{1, 2, 3, 4, 5}, {9, 8, 7}, make([]int, 40)}
	for i := range prompts[2] {
		prompts[2][i] = 100 + i
	}
	alone := make([][]float32, len(prompts))
	for i, p := range prompts {
		s := m.NewSession()
		alone[i], err = s.Forward(ctx, p, false)
		require.NoError(t, err)
		require.NoError(t, s.Close())
	}
	const reps = 4
	errs := make(chan error, len(prompts)*reps)
	for range reps {
		for i, p := range prompts {
			go func() {
				s := m.NewSession()
				got, err := s.Forward(ctx, p, false)
				if err == nil {
					for j := range got {
						if got[j] != alone[i][j] {
							err = fmt.Errorf("prompt %d: logit %d = %v, alone %v", i, j, got[j], alone[i][j])
							break
						}
					}
				}
				errs <- errors.Join(err, s.Close())
			}()
		}
	}
	for range len(prompts) * reps {
		require.NoError(t, <-errs)
	}
}
