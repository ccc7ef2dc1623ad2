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
// model believes, not how a token was drawn. The softmax's weights
// exp(logit - max) come from the kernels' vectorized pass into the
// Sampler's scratch space, with their sum; then a sum over the allowed
// tokens, and two divisions instead of normalising every weight.
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
	w := s.scratch(len(logits))
	z := kernels.ExpShifted(w, logits)
	a := allowedWeight(w, z, mask)
	if !(a > 0) || math.IsNaN(float64(w[tok])) {
		return 0, 0, ErrNoToken
	}
	return min(float64(w[tok])/a, 1), min(a/z, 1), nil
}

// CondProb returns Prob's p alone: how likely token tok is under the
// model's distribution restricted to the tokens mask allows and
// renormalised. It costs what the allowed tokens do, not the vocabulary: a
// mask that allows few tokens (a grammar's usual verdict: a name, a
// separator, the next byte of a line) is summed over its tokens only,
// where Prob must weigh every token for the allowed mass. A nil or dense
// mask goes through Prob.
func (s *Sampler) CondProb(logits []float32, mask *Mask, tok int) (float64, error) {
	if mask == nil || !sparse(mask) || mask.Len() != len(logits) || tok < 0 || tok >= len(logits) {
		p, _, err := s.Prob(logits, mask, tok)
		return p, err
	}
	if !mask.Allowed(tok) {
		return 0, nil
	}
	maxv, ok := maxAllowed(logits, mask)
	if !ok || logits[tok] != logits[tok] {
		return 0, ErrNoToken
	}
	var sum float64
	each(logits, mask, func(_ int, v float32) { sum += float64(expScaled(v, maxv, 1)) })
	return min(float64(expScaled(logits[tok], maxv, 1))/sum, 1), nil
}

// sparse reports whether mask allows few enough tokens (at most one in
// sixteen) that a loop over them beats a vector pass over all of them.
func sparse(mask *Mask) bool { return 16*mask.Count() <= mask.Len() }

// allowedWeight sums the weights w of the tokens mask allows (z, the sum
// of all of them, for a nil mask), without a call per token. A mask that
// allows most tokens (a string's characters) is summed over the tokens it
// rules out instead, as z minus their weight, when that is below half of
// z: the difference then loses no more than the float32 rounding of the
// weights already has.
func allowedWeight(w []float32, z float64, mask *Mask) float64 {
	if mask == nil {
		return z
	}
	if 2*mask.Count() > len(w) {
		var out float64
		for wi, bitsw := range mask.words {
			if lo := wi * 64; len(w)-lo < 64 {
				bitsw |= ^uint64(0) << (len(w) - lo) // tokens past the end are not ruled-out tokens
			}
			for bitsw = ^bitsw; bitsw != 0; bitsw &= bitsw - 1 {
				out += float64(w[wi*64+trailingZeros(bitsw)])
			}
		}
		if out < z/2 {
			return z - out
		}
	}
	var sum float64
	for wi, bitsw := range mask.words {
		for ; bitsw != 0; bitsw &= bitsw - 1 {
			sum += float64(w[wi*64+trailingZeros(bitsw)])
		}
	}
	return sum
}
