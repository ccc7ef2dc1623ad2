package sample

import (
	"math/rand/v2"
	"testing"
)

// vocab is CWM's (Llama 3's) vocabulary size.
const vocab = 128256

func benchLogits() []float32 {
	r := rand.New(rand.NewPCG(1, 2))
	l := make([]float32, vocab)
	for i := range l {
		l[i] = float32(r.NormFloat64() * 3)
	}
	return l
}

func benchSample(b *testing.B, p Params, masked bool) {
	l := benchLogits()
	s, err := New(p)
	if err != nil {
		b.Fatal(err)
	}
	var m *Mask
	if masked {
		m = NewMask(vocab)
		for i := 0; i < vocab; i += 3 {
			m.Allow(i)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.SampleMasked(l, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGreedy(b *testing.B)       { benchSample(b, Params{}, false) }
func BenchmarkGreedyMasked(b *testing.B) { benchSample(b, Params{}, true) }
func BenchmarkTemperature(b *testing.B)  { benchSample(b, Params{Temperature: 0.8}, false) }
func BenchmarkTopK40(b *testing.B)       { benchSample(b, Params{Temperature: 0.8, TopK: 40}, false) }
func BenchmarkTopP09(b *testing.B)       { benchSample(b, Params{Temperature: 0.8, TopP: 0.9}, false) }
func BenchmarkTopKTopP(b *testing.B) {
	benchSample(b, Params{Temperature: 0.8, TopK: 40, TopP: 0.9}, false)
}
func BenchmarkTemperatureMasked(b *testing.B) {
	benchSample(b, Params{Temperature: 0.8}, true)
}

// BenchmarkProb: the confidence's cost per drawn token, one pass over
// CWM's vocabulary with a mask.
func BenchmarkProb(b *testing.B) {
	l := benchLogits()
	m := NewMask(vocab)
	for i := 0; i < vocab; i += 3 {
		m.Allow(i)
	}
	s, err := New(Params{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := s.Prob(l, m, 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSampleThenProb: a constrained greedy decoder's work per token
// on the default model's 4096-token vocabulary: the token (SampleMasked)
// and its probability (Prob), with a third of the tokens allowed (the
// largest logit usually not among them, so greedy looks among the allowed
// ones) and with all but a tenth allowed (a string's characters), against
// a free argmax.
func BenchmarkSampleThenProb(b *testing.B) {
	l := benchLogits()[:4096]
	third, dense := NewMask(len(l)), NewMask(len(l))
	for i := range l {
		if i%3 == 0 {
			third.Allow(i)
		}
		if i%10 != 0 {
			dense.Allow(i)
		}
	}
	s, err := New(Params{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    *Mask
	}{{"two-calls", third}, {"two-calls-dense", dense}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				tok, err := s.SampleMasked(l, c.m)
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.Prob(l, c.m, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("free-argmax", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Sample(l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
