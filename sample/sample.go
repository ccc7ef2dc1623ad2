// Package sample picks the next token from a model's logits: greedy,
// temperature, top-k and top-p (nucleus) sampling with a seeded generator,
// optionally restricted to a Mask of allowed tokens or checked against a
// Constraint.
//
// The transformations follow Hugging Face's generation order: logits are
// divided by the temperature, then cut to the top k, then to the smallest
// set whose probability reaches top_p; the token is drawn from what
// remains, renormalised.
package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/ndbg/ndbg/kernels"
)

// Params configures a Sampler.
type Params struct {
	// Temperature divides the logits; 0 means greedy (argmax).
	Temperature float64
	// TopK keeps the k most likely tokens; 0 keeps all.
	TopK int
	// TopP keeps the smallest set of most likely tokens whose probability
	// reaches TopP; 0 or 1 keeps all.
	TopP float64
	// Seed seeds the generator, so a run can be repeated exactly.
	Seed uint64
}

// Sampler draws tokens. It is not safe for concurrent use (it owns a
// random generator and scratch space); use one per session.
type Sampler struct {
	p    Params
	rng  *rand.Rand
	cand []cand
	w    []float32 // per-token weights, scratch
}

type cand struct {
	id    int32
	logit float32
	prob  float64
}

// ErrNoToken is returned when no token can be drawn: an empty mask, or
// logits that are all -Inf or NaN where allowed.
var ErrNoToken = errors.New("sample: no token allowed")

// New validates p and returns a Sampler.
func New(p Params) (*Sampler, error) {
	if p.Temperature < 0 || math.IsNaN(p.Temperature) || math.IsInf(p.Temperature, 0) {
		return nil, fmt.Errorf("sample: temperature %g must be finite and ≥ 0", p.Temperature)
	}
	if p.TopK < 0 {
		return nil, fmt.Errorf("sample: top-k %d must be ≥ 0", p.TopK)
	}
	if p.TopP < 0 || p.TopP > 1 || math.IsNaN(p.TopP) {
		return nil, fmt.Errorf("sample: top-p %g must be in [0, 1]", p.TopP)
	}
	if p.TopP == 0 {
		p.TopP = 1
	}
	return &Sampler{p: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9E3779B97F4A7C15))}, nil
}

// Params returns the sampler's parameters (TopP 0 reported as 1).
func (s *Sampler) Params() Params { return s.p }

// Sample draws a token from logits.
func (s *Sampler) Sample(logits []float32) (int, error) {
	return s.SampleMasked(logits, nil)
}

// SampleMasked draws a token among those allowed by mask (nil: all). The
// mask must cover len(logits) tokens.
func (s *Sampler) SampleMasked(logits []float32, mask *Mask) (int, error) {
	if mask != nil && mask.Len() != len(logits) {
		return 0, fmt.Errorf("sample: mask of %d tokens for %d logits", mask.Len(), len(logits))
	}
	if len(logits) == 0 {
		return 0, ErrNoToken
	}
	if s.p.Temperature == 0 {
		return greedy(logits, mask)
	}
	if s.p.TopK > 0 || s.p.TopP < 1 {
		return s.truncated(logits, mask)
	}
	return s.full(logits, mask)
}

// Argmax returns the index of the largest value of x, the lowest among
// ties, NaNs skipped: the greedy choice. It returns -1 when x holds no
// value that is not NaN. (kernels.Argmax: a vector pass for the largest
// value, then a scan for its first index.)
func Argmax(x []float32) int { return kernels.Argmax(x) }

// greedy returns the allowed token with the largest logit (the lowest id
// among ties). A mask that allows few tokens is searched directly. Under
// a dense one the largest logit of all is usually allowed (the grammar
// rules out what the model rarely wants), and then it is the answer: no
// allowed token is larger, and none equal comes before the first of all.
// Otherwise it looks among the allowed tokens only.
func greedy(logits []float32, mask *Mask) (int, error) {
	best := -1
	if mask == nil || !sparse(mask) {
		best = Argmax(logits)
	}
	if mask != nil && (best < 0 || !mask.Allowed(best)) {
		best = -1
		bv := float32(math.Inf(-1))
		for wi, w := range mask.words {
			for w != 0 {
				b := trailingZeros(w)
				w &= w - 1
				i := wi*64 + b
				if v := logits[i]; v > bv || best < 0 && v == bv {
					best, bv = i, v
				}
			}
		}
	}
	if best < 0 {
		return 0, ErrNoToken
	}
	return best, nil
}

// full samples from the whole (masked) distribution: one pass for the
// maximum, one for the weights and their sum, one to find the drawn token.
func (s *Sampler) full(logits []float32, mask *Mask) (int, error) {
	maxv, ok := maxAllowed(logits, mask)
	if !ok {
		return 0, ErrNoToken
	}
	invT := float32(1 / s.p.Temperature)
	w := s.scratch(len(logits))
	var z float64
	if mask == nil { // the common case, without a call per token
		for i, v := range logits {
			e := expScaled(v, maxv, invT)
			w[i] = e
			z += float64(e)
		}
	} else {
		clear(w)
		each(logits, mask, func(i int, v float32) {
			e := expScaled(v, maxv, invT)
			w[i] = e
			z += float64(e)
		})
	}
	if !(z > 0) || math.IsInf(z, 0) {
		return 0, ErrNoToken
	}
	// Disallowed tokens have weight 0, so one plain scan finds the draw.
	u := s.rng.Float64() * z
	var acc float64
	found, last := -1, -1
	for i, e := range w {
		if e == 0 {
			continue
		}
		last = i
		acc += float64(e)
		if acc > u {
			found = i
			break
		}
	}
	if found < 0 { // rounding left u just above the sum
		found = last
	}
	return found, nil
}

// nucleus bins: scaled logits (v−max)/T in [−nucleusSpan, 0] fall into
// nucleusBins equal bins, anything lower into the last.
const (
	nucleusBins = 1024
	nucleusSpan = 40
)

// nucleus samples with top-p over the whole (masked) vocabulary without
// sorting it: a histogram of the probability mass by scaled logit finds the
// one bin where the cumulative mass crosses top_p; only that bin's tokens
// are sorted. Tokens in higher bins are all in the nucleus.
func (s *Sampler) nucleus(logits []float32, mask *Mask) (int, error) {
	maxv, ok := maxAllowed(logits, mask)
	if !ok {
		return 0, ErrNoToken
	}
	invT := float32(1 / s.p.Temperature)
	w := s.scratch(len(logits))
	var mass [nucleusBins]float64
	bin := func(v float32) int {
		b := int((maxv - v) * invT * (nucleusBins / nucleusSpan))
		if b >= nucleusBins || b < 0 {
			b = nucleusBins - 1
		}
		return b
	}
	var z float64
	each(logits, mask, func(i int, v float32) {
		e := expScaled(v, maxv, invT)
		w[i] = e
		if e > 0 {
			z += float64(e)
			mass[bin(v)] += float64(e)
		}
	})
	if !(z > 0) || math.IsInf(z, 0) {
		return 0, ErrNoToken
	}
	target := s.p.TopP * z
	var cum float64
	boundary := nucleusBins - 1
	for b, m := range mass {
		if cum+m >= target {
			boundary = b
			break
		}
		cum += m
	}
	c := s.cand[:0]
	each(logits, mask, func(i int, v float32) {
		if w[i] > 0 && bin(v) == boundary {
			c = append(c, cand{id: int32(i), logit: v})
		}
	})
	sort.Slice(c, func(i, j int) bool { return ranksAbove(c[i], c[j]) })
	s.cand = c
	lastIn := cand{id: -1, logit: float32(math.Inf(1))}
	for _, x := range c {
		if cum >= target {
			break
		}
		cum += float64(w[x.id])
		lastIn = x
	}
	u := s.rng.Float64() * cum
	var acc float64
	found, last := -1, -1
	each(logits, mask, func(i int, v float32) {
		if found >= 0 || w[i] == 0 {
			return
		}
		b := bin(v)
		if b > boundary || b == boundary && ranksAbove(lastIn, cand{id: int32(i), logit: v}) {
			return
		}
		last = i
		acc += float64(w[i])
		if acc > u {
			found = i
		}
	})
	if found < 0 {
		found = last
	}
	if found < 0 {
		return 0, ErrNoToken
	}
	return found, nil
}

// ranksAbove orders candidates by decreasing logit, then increasing id.
func ranksAbove(a, b cand) bool {
	return a.logit > b.logit || a.logit == b.logit && a.id < b.id
}

// topK applies top-k, then top-p within the k candidates.
func (s *Sampler) topK(logits []float32, mask *Mask, k int) (int, error) {
	maxv, ok := maxAllowed(logits, mask)
	if !ok {
		return 0, ErrNoToken
	}
	invT := float32(1 / s.p.Temperature)
	s.topN(logits, mask, k)
	c := s.cand
	var z float64
	for i := range c {
		c[i].prob = float64(expScaled(c[i].logit, maxv, invT))
		z += c[i].prob
	}
	if !(z > 0) {
		return 0, ErrNoToken
	}
	var cum float64
	cut := len(c)
	for i := range c {
		if cum >= s.p.TopP*z {
			cut = i
			break
		}
		cum += c[i].prob
	}
	return s.draw(c[:cut])
}

// truncated applies top-k and top-p.
func (s *Sampler) truncated(logits []float32, mask *Mask) (int, error) {
	allowed := len(logits)
	if mask != nil {
		allowed = mask.Count()
	}
	if s.p.TopK > 0 && s.p.TopK < allowed {
		return s.topK(logits, mask, s.p.TopK)
	}
	if s.p.TopP < 1 {
		return s.nucleus(logits, mask)
	}
	return s.full(logits, mask)
}

// scratch returns a weights buffer of n floats owned by the sampler.
func (s *Sampler) scratch(n int) []float32 {
	if cap(s.w) < n {
		s.w = make([]float32, n)
	}
	return s.w[:n]
}

// draw picks among candidates proportionally to prob.
func (s *Sampler) draw(c []cand) (int, error) {
	var z float64
	for _, x := range c {
		z += x.prob
	}
	if !(z > 0) {
		return 0, ErrNoToken
	}
	u := s.rng.Float64() * z
	var acc float64
	for _, x := range c {
		acc += x.prob
		if acc > u {
			return int(x.id), nil
		}
	}
	return int(c[len(c)-1].id), nil
}

// topN fills s.cand with the n allowed tokens of largest logit, sorted by
// decreasing logit (then increasing id), using a size-n min-heap.
func (s *Sampler) topN(logits []float32, mask *Mask, n int) {
	h := s.cand[:0]
	less := func(a, b cand) bool { // a ranks below b
		return a.logit < b.logit || a.logit == b.logit && a.id > b.id
	}
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				l = r
			}
			if !less(h[l], h[i]) {
				return
			}
			h[i], h[l] = h[l], h[i]
			i = l
		}
	}
	each(logits, mask, func(i int, v float32) {
		if v != v { // NaN never ranks
			return
		}
		c := cand{id: int32(i), logit: v}
		if len(h) < n {
			h = append(h, c)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !less(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			return
		}
		if less(h[0], c) {
			h[0] = c
			down(0)
		}
	})
	sort.Slice(h, func(i, j int) bool { return less(h[j], h[i]) })
	s.cand = h
}

// each calls fn for every allowed token.
func each(logits []float32, mask *Mask, fn func(i int, v float32)) {
	if mask == nil {
		for i, v := range logits {
			fn(i, v)
		}
		return
	}
	for wi, w := range mask.words {
		for w != 0 {
			b := trailingZeros(w)
			w &= w - 1
			i := wi*64 + b
			fn(i, logits[i])
		}
	}
}

func maxAllowed(logits []float32, mask *Mask) (float32, bool) {
	m := float32(math.Inf(-1))
	if mask == nil {
		for _, v := range logits {
			if v > m {
				m = v
			}
		}
	} else {
		each(logits, mask, func(i int, v float32) {
			if v > m {
				m = v
			}
		})
	}
	return m, !math.IsInf(float64(m), -1)
}

// expScaled returns exp((v − max)/T), 0 for -Inf or NaN logits.
func expScaled(v, maxv, invT float32) float32 {
	if v != v {
		return 0
	}
	return fastExp((v - maxv) * invT)
}

// fastExp returns e^x for x ≤ 0 with a relative error below 2e-7: x is
// split as k·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor
// polynomial, 2^k by building the exponent bits. About five times faster
// than math.Exp, which matters over a 128k vocabulary.
func fastExp(x float32) float32 {
	if !(x > -87) { // also -Inf
		return 0
	}
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
	)
	k := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - k*ln2hi - k*ln2lo
	p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}
