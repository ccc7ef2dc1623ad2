package sample

import (
	"fmt"
	"math"
)

// Prob returns how likely the model found token tok: p, its probability
// under softmax(logits) at temperature 1 restricted to the tokens mask
// allows and renormalised (the constrained distribution; nil mask: every
// token), and allowed, the probability mass the unrestricted distribution
// gives the tokens mask allows (1 for a nil mask). It is the model's own
// distribution whatever a Sampler's temperature, top-k or top-p: what the
// model believes, not how a token was drawn. One pass over the logits.
func Prob(logits []float32, mask *Mask, tok int) (p, allowed float64, err error) {
	if tok < 0 || tok >= len(logits) {
		return 0, 0, fmt.Errorf("sample: token %d outside %d logits", tok, len(logits))
	}
	if mask != nil && mask.Len() != len(logits) {
		return 0, 0, fmt.Errorf("sample: mask of %d tokens for %d logits", mask.Len(), len(logits))
	}
	if mask != nil && !mask.Allowed(tok) {
		return 0, 0, nil
	}
	maxv, ok := maxAllowed(logits, nil)
	if !ok || math.IsInf(float64(maxv), 1) {
		return 0, 0, ErrNoToken
	}
	var z, za float64
	for i, v := range logits {
		e := float64(expScaled(v, maxv, 1))
		z += e
		if mask == nil || mask.words[i>>6]&(1<<(uint(i)&63)) != 0 {
			za += e
		}
	}
	if !(za > 0) {
		return 0, 0, ErrNoToken
	}
	return float64(expScaled(logits[tok], maxv, 1)) / za, za / z, nil
}
