package sample

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// softmax64 is the reference distribution, in float64.
func softmax64(logits []float32, T float64, allowed func(int) bool) []float64 {
	p := make([]float64, len(logits))
	m := math.Inf(-1)
	for i, v := range logits {
		if allowed(i) {
			m = math.Max(m, float64(v))
		}
	}
	var z float64
	for i, v := range logits {
		if allowed(i) {
			p[i] = math.Exp((float64(v) - m) / T)
			z += p[i]
		}
	}
	for i := range p {
		p[i] /= z
	}
	return p
}

// truncateRef applies top-k then top-p to a distribution, the way Hugging
// Face's warpers do (sort descending, keep while the mass before < p).
func truncateRef(p []float64, k int, topP float64) []float64 {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] > p[idx[b]] })
	if k > 0 && k < len(idx) {
		idx = idx[:k]
	}
	var z float64
	for _, i := range idx {
		z += p[i]
	}
	out := make([]float64, len(p))
	var cum float64
	for _, i := range idx {
		if cum >= topP {
			break
		}
		out[i] = p[i] / z
		cum += p[i] / z
	}
	var s float64
	for _, v := range out {
		s += v
	}
	for i := range out {
		out[i] /= s
	}
	return out
}

// checkDistribution draws n tokens and checks every frequency against want
// within 5 standard deviations (plus a floor), and that tokens of
// probability 0 never appear.
func checkDistribution(t *testing.T, draw func() int, want []float64, n int) {
	t.Helper()
	counts := make([]int, len(want))
	for i := 0; i < n; i++ {
		tok := draw()
		require.GreaterOrEqual(t, tok, 0)
		counts[tok]++
	}
	for i, p := range want {
		f := float64(counts[i]) / float64(n)
		if p == 0 {
			assert.Zero(t, counts[i], "token %d has probability 0", i)
			continue
		}
		sd := math.Sqrt(p * (1 - p) / float64(n))
		assert.InDelta(t, p, f, 5*sd+1e-4, "token %d", i)
	}
}

var testLogits = []float32{1.5, -0.5, 3, 0.25, 2.2, -4, 0, 2.9}

func TestGreedy(t *testing.T) {
	s, err := New(Params{})
	require.NoError(t, err)
	tok, err := s.Sample(testLogits)
	require.NoError(t, err)
	assert.Equal(t, 2, tok)
	m := NewMask(len(testLogits))
	m.Allow(4)
	m.Allow(1)
	tok, err = s.SampleMasked(testLogits, m)
	require.NoError(t, err)
	assert.Equal(t, 4, tok)
	m.Reset()
	_, err = s.SampleMasked(testLogits, m)
	assert.ErrorIs(t, err, ErrNoToken)
	_, err = s.SampleMasked(testLogits, NewMask(3))
	assert.Error(t, err)

	// Random logits with ties and NaNs, random masks: the allowed token with
	// the largest logit, the lowest among ties (the largest of all allowed
	// or not); every other mask allows about one token in 32, so that
	// greedy searches the allowed tokens alone.
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 4000 {
		n := 1 + r.IntN(300)
		logits, m := make([]float32, n), NewMask(n)
		for i := range logits {
			logits[i] = float32(r.IntN(8)) // ties
			if r.IntN(20) == 0 {
				logits[i] = float32(math.NaN())
			}
			if trial%2 == 0 && r.IntN(3) > 0 || trial%2 == 1 && r.IntN(32) == 0 {
				m.Allow(i)
			}
		}
		want := -1
		for i, v := range logits {
			if m.Allowed(i) && v == v && (want < 0 || v > logits[want]) {
				want = i
			}
		}
		tok, err := s.SampleMasked(logits, m)
		if want < 0 {
			require.ErrorIs(t, err, ErrNoToken)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, want, tok, "logits %v", logits)
	}
}

func TestTemperatureDistribution(t *testing.T) {
	for _, T := range []float64{0.5, 1, 2} {
		s, err := New(Params{Temperature: T, Seed: 1})
		require.NoError(t, err)
		want := softmax64(testLogits, T, func(int) bool { return true })
		checkDistribution(t, func() int { tok, _ := s.Sample(testLogits); return tok }, want, 100000)
	}
}

func TestMaskedDistribution(t *testing.T) {
	s, err := New(Params{Temperature: 1, Seed: 2})
	require.NoError(t, err)
	m := NewMask(len(testLogits))
	for _, i := range []int{0, 1, 3, 6} {
		m.Allow(i)
	}
	want := softmax64(testLogits, 1, m.Allowed)
	checkDistribution(t, func() int { tok, _ := s.SampleMasked(testLogits, m); return tok }, want, 100000)
}

func TestTopKTopP(t *testing.T) {
	cases := []Params{
		{Temperature: 1, TopK: 3},
		{Temperature: 0.7, TopP: 0.8},
		{Temperature: 1.3, TopK: 5, TopP: 0.6},
		{Temperature: 1, TopK: 1},
	}
	for i, p := range cases {
		p.Seed = uint64(i)
		s, err := New(p)
		require.NoError(t, err)
		topP := p.TopP
		if topP == 0 {
			topP = 1
		}
		want := truncateRef(softmax64(testLogits, p.Temperature, func(int) bool { return true }), p.TopK, topP)
		checkDistribution(t, func() int { tok, _ := s.Sample(testLogits); return tok }, want, 50000)
	}
}

// Top-p over a large vocabulary needs the candidate set to grow past its
// first guess of 64 tokens.
func TestTopPLargeVocabulary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 0.3)
	}
	s, err := New(Params{Temperature: 1, TopP: 0.5, Seed: 5})
	require.NoError(t, err)
	want := truncateRef(softmax64(logits, 1, func(int) bool { return true }), 0, 0.5)
	kept := 0
	for _, p := range want {
		if p > 0 {
			kept++
		}
	}
	require.Greater(t, kept, 256)
	seen := map[int]bool{}
	for i := 0; i < 4000; i++ {
		tok, err := s.Sample(logits)
		require.NoError(t, err)
		require.Greater(t, want[tok], 0.0, "token %d outside the nucleus", tok)
		seen[tok] = true
	}
	assert.Greater(t, len(seen), kept/3)
}

func TestSeeded(t *testing.T) {
	run := func(seed uint64) []int {
		s, err := New(Params{Temperature: 1, TopP: 0.95, Seed: seed})
		require.NoError(t, err)
		var out []int
		for i := 0; i < 50; i++ {
			tok, err := s.Sample(testLogits)
			require.NoError(t, err)
			out = append(out, tok)
		}
		return out
	}
	assert.Equal(t, run(42), run(42))
	assert.NotEqual(t, run(42), run(43))
}

func TestParamsValidation(t *testing.T) {
	for _, p := range []Params{{Temperature: -1}, {TopK: -1}, {TopP: 1.5}, {Temperature: math.NaN()}} {
		_, err := New(p)
		assert.Error(t, err, "%+v", p)
	}
}

func TestNoFiniteLogits(t *testing.T) {
	inf := float32(math.Inf(-1))
	s, err := New(Params{Temperature: 1})
	require.NoError(t, err)
	_, err = s.Sample([]float32{inf, inf})
	assert.ErrorIs(t, err, ErrNoToken)
	s, err = New(Params{Temperature: 1, TopK: 1})
	require.NoError(t, err)
	_, err = s.Sample([]float32{inf, float32(math.NaN())})
	assert.ErrorIs(t, err, ErrNoToken)
	tok, err := s.Sample([]float32{float32(math.NaN()), 1})
	require.NoError(t, err)
	assert.Equal(t, 1, tok)
}

func TestMask(t *testing.T) {
	m := NewMask(130)
	assert.Equal(t, 0, m.Count())
	m.AllowAll()
	assert.Equal(t, 130, m.Count())
	m.Disallow(129)
	m.Disallow(0)
	assert.False(t, m.Allowed(0))
	assert.True(t, m.Allowed(64))
	assert.False(t, m.Allowed(130))
	assert.False(t, m.Allowed(-1))
	m.Allow(500) // ignored
	assert.Equal(t, 128, m.Count())

	// Only: the one allowed token, in any word; none or two: false.
	_, ok := m.Only()
	assert.False(t, ok)
	for _, id := range []int{0, 63, 64, 129} {
		m.Reset()
		_, ok = m.Only()
		assert.False(t, ok)
		m.Allow(id)
		got, ok := m.Only()
		assert.True(t, ok)
		assert.Equal(t, id, got)
		m.Allow((id + 1) % 130)
		_, ok = m.Only()
		assert.False(t, ok, "two tokens: %d and the next", id)
	}
}

// setConstraint allows a fixed set and counts how it is consulted.
type setConstraint struct {
	ok            map[int]bool
	asked, filled int
}

func (c *setConstraint) Allowed(tok int) bool { c.asked++; return c.ok[tok] }
func (c *setConstraint) FillMask(m *Mask) error {
	c.filled++
	for t := range c.ok {
		m.Allow(t)
	}
	return nil
}

func TestSampleConstrained(t *testing.T) {
	m := NewMask(len(testLogits))
	// Greedy: the best token is allowed, so no mask is built.
	c := &setConstraint{ok: map[int]bool{2: true, 0: true}}
	s, err := New(Params{})
	require.NoError(t, err)
	tok, err := s.SampleConstrained(testLogits, c, m)
	require.NoError(t, err)
	assert.Equal(t, 2, tok)
	assert.Equal(t, 0, c.filled)
	// Greedy, best rejected: falls back to the mask.
	c = &setConstraint{ok: map[int]bool{0: true, 1: true}}
	tok, err = s.SampleConstrained(testLogits, c, m)
	require.NoError(t, err)
	assert.Equal(t, 0, tok)
	assert.Equal(t, 1, c.filled)
	// Sampling: the sample-first shortcut keeps the masked distribution.
	s, err = New(Params{Temperature: 1, Seed: 9})
	require.NoError(t, err)
	c = &setConstraint{ok: map[int]bool{0: true, 3: true, 4: true, 6: true}}
	want := softmax64(testLogits, 1, func(i int) bool { return c.ok[i] })
	checkDistribution(t, func() int {
		tok, err := s.SampleConstrained(testLogits, c, m)
		require.NoError(t, err)
		return tok
	}, want, 100000)
}

func TestFastExp(t *testing.T) {
	for x := float32(-86.9); x <= 0; x += 0.0137 {
		want := math.Exp(float64(x))
		got := float64(fastExp(x))
		require.InDelta(t, 1, got/want, 3e-7, "x = %g", x)
	}
	assert.Equal(t, float32(1), fastExp(0))
	assert.Zero(t, fastExp(float32(math.Inf(-1))))
	assert.Zero(t, fastExp(-100))
}

// TestProb checks Prob against a plain float64 softmax.
func TestProb(t *testing.T) {
	logits := []float32{1, 3, -2, 0.5, float32(math.Inf(-1)), 2}
	exp := make([]float64, len(logits))
	var z float64
	for i, v := range logits {
		exp[i] = math.Exp(float64(v))
		z += exp[i]
	}
	smp, err := New(Params{})
	require.NoError(t, err)
	p, allowed, err := smp.Prob(logits, nil, 1)
	require.NoError(t, err)
	assert.InDelta(t, exp[1]/z, p, 1e-6)
	assert.InDelta(t, 1, allowed, 1e-9)

	mask := NewMask(len(logits))
	mask.Allow(0)
	mask.Allow(3)
	za := exp[0] + exp[3]
	p, allowed, err = smp.Prob(logits, mask, 3)
	require.NoError(t, err)
	assert.InDelta(t, exp[3]/za, p, 1e-6)
	assert.InDelta(t, za/z, allowed, 1e-6)

	p, _, err = smp.Prob(logits, mask, 1) // not allowed
	require.NoError(t, err)
	assert.Zero(t, p)
	_, _, err = smp.Prob(logits, mask, 9)
	assert.Error(t, err)
	_, _, err = smp.Prob(logits, NewMask(3), 0)
	assert.Error(t, err)

	// Masks that allow most tokens (summed over those they rule out), of
	// lengths that end within a word, and ones whose allowed tokens hold a
	// tiny mass (summed directly: 1 minus the rest would lose it).
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 400 {
		n := 2 + r.IntN(300)
		logits, mask := make([]float32, n), NewMask(n)
		tiny := trial%2 == 1
		for i := range logits {
			logits[i] = float32(4 * r.NormFloat64())
			if r.IntN(10) > 0 {
				mask.Allow(i)
			}
		}
		tok := r.IntN(n)
		mask.Allow(tok)
		if tiny { // one ruled-out token holds nearly all the mass
			big := (tok + 1) % n
			mask.Disallow(big)
			logits[big] = 60
		}
		exp := make([]float64, n)
		var z, za float64
		for i, v := range logits {
			exp[i] = math.Exp(float64(v))
			z += exp[i]
			if mask.Allowed(i) {
				za += exp[i]
			}
		}
		p, allowed, err := smp.Prob(logits, mask, tok)
		require.NoError(t, err)
		require.InEpsilon(t, za/z, allowed, 1e-5, "n %d: allowed mass", n)
		require.InDelta(t, exp[tok]/za, p, 1e-5, "n %d: p", n)
	}
}

// CondProb is Prob's p, over masks that allow few tokens (summed over
// them) and many (through Prob), against float64 sums; with NaN and -Inf
// logits among the allowed tokens.
func TestCondProb(t *testing.T) {
	smp, err := New(Params{})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 6))
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	for trial := range 600 {
		n := 16 + r.IntN(600)
		logits, mask := make([]float32, n), NewMask(n)
		den := []int{2, 20, 64}[trial%3]
		for i := range logits {
			logits[i] = float32(4 * r.NormFloat64())
			if r.IntN(den) == 0 {
				mask.Allow(i)
			}
		}
		tok := r.IntN(n)
		mask.Allow(tok)
		if trial%5 == 4 { // a -Inf token allowed; NaN only elsewhere
			logits[(tok+1)%n] = inf
			mask.Allow((tok + 1) % n)
			logits[(tok+2)%n] = nan
		}
		var za float64
		for i, v := range logits {
			if mask.Allowed(i) && v == v {
				za += math.Exp(float64(v))
			}
		}
		p, err := smp.CondProb(logits, mask, tok)
		if trial%5 == 4 && !sparse(mask) {
			require.ErrorIs(t, err, ErrNoToken) // through Prob: a NaN among all the tokens
			continue
		}
		require.NoError(t, err)
		require.InDelta(t, math.Exp(float64(logits[tok]))/za, p, 1e-5, "n %d, %d allowed", n, mask.Count())
		if trial%5 == 4 {
			continue // Prob's sum over all tokens is NaN
		}
		pp, _, err := smp.Prob(logits, mask, tok)
		require.NoError(t, err)
		require.InDelta(t, pp, p, 1e-6)
	}
	// Not allowed: 0; a NaN token or nothing finite allowed: ErrNoToken.
	logits := make([]float32, 64)
	mask := NewMask(64)
	mask.Allow(3)
	p, err := smp.CondProb(logits, mask, 4)
	require.NoError(t, err)
	require.Zero(t, p)
	logits[3] = nan
	_, err = smp.CondProb(logits, mask, 3)
	require.ErrorIs(t, err, ErrNoToken)
	logits[3] = inf
	_, err = smp.CondProb(logits, mask, 3)
	require.ErrorIs(t, err, ErrNoToken)
	_, err = smp.CondProb(logits, NewMask(3), 0)
	require.Error(t, err)
}

// Argmax: the lowest index among ties, NaNs skipped, -1 when nothing but
// NaN (what the CUDA argmax_1 kernel is checked against, too).
func TestArgmax(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(-1))
	require.Equal(t, 2, Argmax([]float32{1, nan, 3, 3, -1}))
	require.Equal(t, 1, Argmax([]float32{nan, inf, inf}))
	require.Equal(t, -1, Argmax([]float32{nan, nan}))
	require.Equal(t, -1, Argmax(nil))
}
