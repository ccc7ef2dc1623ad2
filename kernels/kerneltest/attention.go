package kerneltest

import "math"

// RefAttention computes causal GQA attention in float64, by the textbook
// formula (softmax of q·k/sqrt(hd) over the visible keys, times v), for n
// queries at positions pos0 … (q: n × heads × hd) over k and v, whose row r (kvHeads ×
// hd) holds position kpos0 + r; window > 0 limits each query at p to keys
// at positions > p - window. It returns n × heads × hd outputs.
func RefAttention(q, k, v []float32, n, heads, kvHeads, hd, pos0, kpos0, window int) []float64 {
	out := make([]float64, n*heads*hd)
	group := heads / kvHeads
	kvDim := kvHeads * hd
	scale := 1 / math.Sqrt(float64(hd))
	for t := 0; t < n; t++ {
		pos := pos0 + t
		first := 0
		if window > 0 {
			first = max(0, pos-window+1)
		}
		for h := 0; h < heads; h++ {
			g := h / group
			qr := q[(t*heads+h)*hd:]
			scores := make([]float64, pos+1-first)
			m := math.Inf(-1)
			for j := first; j <= pos; j++ {
				kr := k[(j-kpos0)*kvDim+g*hd:]
				var s float64
				for d := 0; d < hd; d++ {
					s += float64(qr[d]) * float64(kr[d])
				}
				s *= scale
				scores[j-first] = s
				m = math.Max(m, s)
			}
			var sum float64
			for i := range scores {
				scores[i] = math.Exp(scores[i] - m)
				sum += scores[i]
			}
			o := out[(t*heads+h)*hd:]
			for j := first; j <= pos; j++ {
				vr := v[(j-kpos0)*kvDim+g*hd:]
				p := scores[j-first] / sum
				for d := 0; d < hd; d++ {
					o[d] += p * float64(vr[d])
				}
			}
		}
	}
	return out
}
