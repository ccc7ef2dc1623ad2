package model

import (
	"math"

	"github.com/ndbg/ndbg/weights"
)

// RopeTable holds cos and sin of position·inv_freq for every position up to
// the context, so the forward pass never calls math.Cos or math.Sin: row p
// is Cos[p*half : (p+1)*half] (and Sin likewise), half = HeadDim/2. Every
// device rotates with these tables (a GPU uploads them).
//
// The values follow Hugging Face's float32 computation: inv_freq and the
// product position·inv_freq are rounded to float32 exactly as torch does,
// so that long positions, where the float32 rounding of the angle is
// visible, rotate as they did in training.
type RopeTable struct {
	Half     int
	Cos, Sin []float32
}

// ropeInvFreq returns the per-pair inverse frequencies
// 1/theta^(2i/d), optionally rescaled by llama3 scaling, in float32.
func ropeInvFreq(headDim int, theta float64, s *weights.RopeScaling) []float32 {
	half := headDim / 2
	inv := make([]float32, half)
	for i := range inv {
		// torch: base ** (arange(0, d, 2).float() / d), then 1.0 / that.
		e := float32(float32(2*i) / float32(headDim))
		inv[i] = float32(1 / float32(math.Pow(theta, float64(e))))
	}
	if s == nil {
		return inv
	}
	factor := float32(s.Factor)
	lowWavelen := float32(float64(s.OriginalMaxPositionEmbeddings) / s.LowFreqFactor)
	highWavelen := float32(float64(s.OriginalMaxPositionEmbeddings) / s.HighFreqFactor)
	for i, f := range inv {
		wavelen := float32(2*math.Pi) / f
		switch {
		case wavelen < highWavelen: // high frequency: unchanged
		case wavelen > lowWavelen: // low frequency: interpolated by factor
			inv[i] = f / factor
		default: // the band between: blend the two
			smooth := (float32(s.OriginalMaxPositionEmbeddings)/wavelen - float32(s.LowFreqFactor)) /
				float32(s.HighFreqFactor-s.LowFreqFactor)
			inv[i] = (1-smooth)*f/factor + smooth*f
		}
	}
	return inv
}

// NewRopeTable precomputes cos/sin of cfg's RoPE for positions [0, n).
func NewRopeTable(cfg *Config, n int) *RopeTable {
	inv := ropeInvFreq(cfg.HeadDim, cfg.RopeTheta, cfg.RopeScaling)
	half := len(inv)
	t := &RopeTable{Half: half, Cos: make([]float32, n*half), Sin: make([]float32, n*half)}
	for p := 0; p < n; p++ {
		row := p * half
		for i, f := range inv {
			a := float32(p) * f // rounded to float32, as torch's matmul of float32 tensors
			t.Cos[row+i] = float32(math.Cos(float64(a)))
			t.Sin[row+i] = float32(math.Sin(float64(a)))
		}
	}
	return t
}

// Rotate applies RoPE at position pos to each head of x (heads × headDim,
// contiguous) in Hugging Face's rotate_half convention: element i is paired
// with element i+headDim/2, not with its neighbour:
//
//	x'[i]      = x[i]·cos − x[i+h]·sin
//	x'[i+h]    = x[i+h]·cos + x[i]·sin
func (t *RopeTable) Rotate(dst, x []float32, heads, pos int) {
	h := t.Half
	cos := t.Cos[pos*h : pos*h+h]
	sin := t.Sin[pos*h : pos*h+h]
	for hd := 0; hd < heads; hd++ {
		src := x[hd*2*h : (hd+1)*2*h]
		out := dst[hd*2*h : (hd+1)*2*h]
		x1, x2 := src[:h], src[h:2*h]
		o1, o2 := out[:h], out[h:2*h]
		for i := 0; i < h; i++ {
			a, b := x1[i], x2[i]
			o1[i] = a*cos[i] - b*sin[i]
			o2[i] = b*cos[i] + a*sin[i]
		}
	}
}
