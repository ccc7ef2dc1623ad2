package model

import (
	"context"
	"errors"
	"fmt"

	"github.com/ndbg/ndbg/kernels"
)

// maxChunk bounds the tokens of one batched pass: long prompts are
// processed in chunks of this many, which keeps activations small (for the
// 1.8b shape about 30 MB) while the matrix products stay compute-bound.
const maxChunk = 256

// Session is one sequence being decoded: its KV cache, its activation
// buffers and the logits of its last token. Sessions of one Model may run
// concurrently; a single Session may not.
type Session struct {
	m      *Model
	cache  *Cache
	tokens []int     // the tokens in the cache, in order
	last   []float32 // logits after the last token, nil before any

	// activations, sized for up to cap tokens
	cap                         int
	x, xb, qkv, q, att, tmp, gu []float32
	ffn, logits                 []float32
}

// ErrContext is returned (wrapped) when a sequence would exceed the model's
// context length.
var ErrContext = errors.New("model: sequence longer than the context")

// ErrToken is returned (wrapped) for a token id outside the vocabulary.
var ErrToken = errors.New("model: token id out of range")

// NewSession returns an empty session.
func (m *Model) NewSession() *Session {
	return &Session{m: m, cache: newCache(m.cfg.Layers, m.cfg.KVDim())}
}

// Len returns the number of tokens in the session's cache.
func (s *Session) Len() int { return s.cache.Len() }

// Tokens returns the tokens the session has consumed. The slice must not
// be modified; it is valid until the next Forward or Truncate.
func (s *Session) Tokens() []int { return s.tokens[:s.cache.Len()] }

// Model returns the session's model.
func (s *Session) Model() *Model { return s.m }

// Last returns the logits after the session's last token (nil when the
// session is empty or was truncated). The slice is owned by the session
// and overwritten by the next Forward.
func (s *Session) Last() []float32 { return s.last }

// Fork returns a new session continuing from the same tokens. It shares the
// KV cache (copy-on-write, see Cache.Fork) and copies the last logits, so
// computing a long prefix once and forking per step or per user costs no
// recomputation.
func (s *Session) Fork() *Session {
	f := &Session{m: s.m, cache: s.cache.Fork(), tokens: append([]int(nil), s.Tokens()...)}
	if s.last != nil {
		f.last = append([]float32(nil), s.last...)
	}
	return f
}

// Truncate rolls the session back to its first n tokens. The last logits
// are forgotten unless n is the current length.
func (s *Session) Truncate(n int) error {
	if n == s.cache.Len() {
		return nil
	}
	if err := s.cache.Truncate(n); err != nil {
		return err
	}
	s.tokens = s.tokens[:n]
	s.last = nil
	return nil
}

func (s *Session) ensure(n int) {
	if n <= s.cap {
		return
	}
	c := s.m.cfg
	s.cap = n
	s.x = make([]float32, n*c.Hidden)
	s.xb = make([]float32, n*c.Hidden)
	s.tmp = make([]float32, n*c.Hidden)
	s.qkv = make([]float32, n*(c.QDim()+2*c.KVDim()))
	s.q = make([]float32, n*c.QDim())
	s.att = make([]float32, n*c.QDim())
	s.gu = make([]float32, n*2*c.FFN)
	s.ffn = make([]float32, n*c.FFN)
}

// Forward appends tokens to the session in batched passes (a whole prompt
// at once, in chunks of up to 256 tokens) and returns logits: for every
// token (len(tokens) × Vocab) when all is true, otherwise for the last
// token only (Vocab values, also kept as Last). The returned slice is owned
// by the session and valid until its next call.
//
// Token ids outside the vocabulary, an empty input and a sequence longer
// than the context are errors that leave the session unchanged; so is a
// cancelled ctx, checked between layers.
func (s *Session) Forward(ctx context.Context, tokens []int, all bool) ([]float32, error) {
	c := &s.m.cfg
	if len(tokens) == 0 {
		return nil, errors.New("model: forward of no tokens")
	}
	for i, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return nil, fmt.Errorf("%w: token %d at index %d, vocabulary %d", ErrToken, t, i, c.Vocab)
		}
	}
	start := s.cache.Len()
	if start+len(tokens) > c.Context {
		return nil, fmt.Errorf("%w: %d cached + %d new tokens > %d", ErrContext, start, len(tokens), c.Context)
	}
	var out []float32
	if all {
		if need := len(tokens) * c.Vocab; cap(s.logits) < need {
			s.logits = make([]float32, need)
		}
		out = s.logits[:len(tokens)*c.Vocab]
	} else {
		if cap(s.logits) < c.Vocab {
			s.logits = make([]float32, c.Vocab)
		}
		out = s.logits[:c.Vocab]
	}
	for done := 0; done < len(tokens); {
		n := min(maxChunk, len(tokens)-done)
		var dst []float32
		switch {
		case all:
			dst = out[done*c.Vocab : (done+n)*c.Vocab]
		case done+n == len(tokens):
			dst = out
		}
		if err := s.step(ctx, tokens[done:done+n], dst, all); err != nil {
			s.cache.Truncate(start) // drop the partial chunks; never fails here
			s.last = nil
			return nil, err
		}
		done += n
	}
	s.tokens = append(s.tokens[:start], tokens...)
	s.last = out[len(out)-c.Vocab:]
	return out, nil
}

// step runs one chunk of n ≤ maxChunk tokens through every layer. When dst
// is non-nil it receives the logits of every row (all) or of the last row.
func (s *Session) step(ctx context.Context, tokens []int, dst []float32, all bool) error {
	m := s.m
	c := &m.cfg
	be := m.be
	n := len(tokens)
	s.ensure(n)
	H, Q, KV, F := c.Hidden, c.QDim(), c.KVDim(), c.FFN
	W := Q + 2*KV
	x, xb, tmp := s.x[:n*H], s.xb[:n*H], s.tmp[:n*H]
	qkv, q, att := s.qkv[:n*W], s.q[:n*Q], s.att[:n*Q]
	gu, ffn := s.gu[:n*2*F], s.ffn[:n*F]

	for i, t := range tokens {
		m.embed.Row(x[i*H:(i+1)*H], t)
	}
	pos0 := s.cache.Len()
	s.cache.grow(n)
	for l := range m.layers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("model: forward: %w", err)
		}
		lw := &m.layers[l]
		be.RMSNorm(xb, x, n, lw.attnNorm, c.NormEps)
		if err := be.MatMul(qkv, xb, n, lw.qkv); err != nil {
			return fmt.Errorf("model: layer %d qkv: %w", l, err)
		}
		for i := 0; i < n; i++ {
			row := qkv[i*W : (i+1)*W]
			p := pos0 + i
			m.rope.rotate(q[i*Q:(i+1)*Q], row[:Q], c.Heads, p)
			m.rope.rotate(s.cache.row(l, 0, p), row[Q:Q+KV], c.KVHeads, p)
			copy(s.cache.row(l, 1, p), row[Q+KV:])
		}
		be.Attention(att, q, AttentionSpec{Layer: l, N: n, Pos0: pos0, Heads: c.Heads, KVHeads: c.KVHeads,
			HeadDim: c.HeadDim, Window: c.Window(l)}, s.cache)
		if err := be.MatMul(tmp, att, n, lw.o); err != nil {
			return fmt.Errorf("model: layer %d o_proj: %w", l, err)
		}
		kernels.Add(x, x, tmp)
		be.RMSNorm(xb, x, n, lw.ffnNorm, c.NormEps)
		if err := be.MatMul(gu, xb, n, lw.gateUp); err != nil {
			return fmt.Errorf("model: layer %d gate/up: %w", l, err)
		}
		be.SwiGLU(ffn, gu, n, F)
		if err := be.MatMul(tmp, ffn, n, lw.down); err != nil {
			return fmt.Errorf("model: layer %d down_proj: %w", l, err)
		}
		kernels.Add(x, x, tmp)
		if err := be.Sync(); err != nil {
			return fmt.Errorf("model: layer %d: %w", l, err)
		}
	}
	if dst == nil {
		return nil
	}
	rows, xs := n, x
	if !all {
		rows, xs = 1, x[(n-1)*H:]
	}
	be.RMSNorm(xb, xs, rows, m.norm, c.NormEps)
	if err := be.MatMul(dst, xb, rows, m.head); err != nil {
		return fmt.Errorf("model: lm_head: %w", err)
	}
	return be.Sync()
}
