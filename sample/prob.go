package sample

import (
	"fmt"
	"math"

	"github.com/ndbg/ndbg/kernels"
)

// Prob returns how likely the model found token tok: p, its probability
// under softmax(logits) at temperature 1 restricted to the tokens mask
// allows and renormalised (the constrained distribution; nil mask: every
// token), and allowed, the probability mass the unrestricted distribution
// gives the tokens mask allows (1 for a nil mask). It is the model's own
// distribution whatever the Sampler's temperature, top-k or top-p: what the
// model believes, not how a token was drawn. The softmax is the kernels'
// vectorized one, into the Sampler's scratch space: one pass over the
// logits, then a sum over the allowed tokens.
func (s *Sampler) Prob(logits []float32, mask *Mask, tok int) (p, allowed float64, err error) {
	if tok < 0 || tok >= len(logits) {
		return 0, 0, fmt.Errorf("sample: token %d outside %d logits", tok, len(logits))
	}
	if mask != nil && mask.Len() != len(logits) {
		return 0, 0, fmt.Errorf("sample: mask of %d tokens for %d logits", mask.Len(), len(logits))
	}
	if mask != nil && !mask.Allowed(tok) {
		return 0, 0, nil
	}
	w := s.softmax(logits)
	allowed = 1
	if mask != nil {
		allowed = 0
		for wi, bitsw := range mask.words {
			for bitsw != 0 {
				i := wi*64 + trailingZeros(bitsw)
				bitsw &= bitsw - 1
				allowed += float64(w[i])
			}
		}
	}
	return probOf(w, tok, allowed)
}

// SampleProb draws a token as SampleMasked does and returns it with p and
// allowed as Prob gives them for it: what a constrained decoder that
// reports its confidence needs at every token. For greedy decoding it
// takes fewer passes over the vocabulary than the two calls: after the
// softmax, one pass over the allowed tokens both finds the largest logit
// and sums the allowed mass, so the token, p and allowed are those of
// SampleMasked then Prob to the bit.
func (s *Sampler) SampleProb(logits []float32, mask *Mask) (tok int, p, allowed float64, err error) {
	if s.p.Temperature != 0 || mask == nil {
		if tok, err = s.SampleMasked(logits, mask); err != nil {
			return 0, 0, 0, err
		}
		p, allowed, err = s.Prob(logits, mask, tok)
		return tok, p, allowed, err
	}
	if mask.Len() != len(logits) {
		return 0, 0, 0, fmt.Errorf("sample: mask of %d tokens for %d logits", mask.Len(), len(logits))
	}
	if len(logits) == 0 {
		return 0, 0, 0, ErrNoToken
	}
	w := s.softmax(logits)
	best, bv := -1, float32(math.Inf(-1))
	for wi, bitsw := range mask.words {
		for bitsw != 0 {
			i := wi*64 + trailingZeros(bitsw)
			bitsw &= bitsw - 1
			// greedy's rule: the lowest id among ties, NaNs skipped
			if v := logits[i]; v > bv || best < 0 && v == bv {
				best, bv = i, v
			}
			allowed += float64(w[i])
		}
	}
	if best < 0 {
		return 0, 0, 0, ErrNoToken
	}
	p, allowed, err = probOf(w, best, allowed)
	return best, p, allowed, err
}

// softmax returns softmax(logits) in the Sampler's scratch space.
func (s *Sampler) softmax(logits []float32) []float32 {
	w := s.scratch(len(logits))
	copy(w, logits)
	kernels.Softmax(w)
	return w
}

// probOf is Prob's result for token tok from the softmax w and the mass
// allowed of the allowed tokens.
func probOf(w []float32, tok int, allowed float64) (p, a float64, err error) {
	if !(allowed > 0) || math.IsNaN(float64(w[tok])) {
		return 0, 0, ErrNoToken
	}
	return min(float64(w[tok])/allowed, 1), min(allowed, 1), nil
}
