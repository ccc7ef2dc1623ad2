package sample

import (
	"fmt"
	"math/bits"
)

func trailingZeros(w uint64) int { return bits.TrailingZeros64(w) }

// Constraint is the hook through which a constrained decoder restricts the
// next token.
type Constraint interface {
	// Allowed reports whether token may come next.
	Allowed(token int) bool
	// FillMask sets mask to exactly the tokens that may come next.
	FillMask(mask *Mask) error
}

// SampleConstrained draws a token allowed by c. Where it is exact (greedy,
// or plain temperature sampling without top-k/top-p) it first samples
// without the constraint and asks c only about that token, building the
// full mask only when it is rejected: the result has exactly the masked
// distribution (an accepted draw of t has probability p_t, a rejection
// R = Σ_disallowed p, then t with p_t/(1−R): p_t/(1−R) in all), at the cost
// of one Allowed call in the common case. With top-k or top-p the
// truncation depends on the mask, so the mask is always built. mask is
// scratch space for the vocabulary, reused between calls.
func (s *Sampler) SampleConstrained(logits []float32, c Constraint, mask *Mask) (int, error) {
	if mask == nil || mask.Len() != len(logits) {
		return 0, fmt.Errorf("sample: constrained sampling needs a mask of %d tokens", len(logits))
	}
	if s.p.Temperature == 0 || s.p.TopK == 0 && s.p.TopP >= 1 {
		tok, err := s.SampleMasked(logits, nil)
		if err == nil && c.Allowed(tok) {
			return tok, nil
		}
	}
	mask.Reset()
	if err := c.FillMask(mask); err != nil {
		return 0, fmt.Errorf("sample: constraint: %w", err)
	}
	return s.SampleMasked(logits, mask)
}
