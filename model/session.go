package model

import (
	"context"
	"errors"
	"fmt"
)

// maxChunk bounds the tokens of one batched pass: long prompts are
// processed in chunks of this many, which keeps activations small (for the
// 1.8b shape about 30 MB) while the matrix products stay compute-bound.
const maxChunk = 256

// Session is one sequence being decoded: its Seq on the model's device
// (KV cache and activations), the tokens it has read and the logits of its
// last token. Sessions of one Model may run concurrently; a single Session
// may not.
type Session struct {
	m      *Model
	seq    Seq
	tokens []int     // the tokens in the cache, in order
	last   []float32 // logits after the last token, nil before any
	logits []float32 // host buffer Forward returns
}

// ErrContext is returned (wrapped) when a sequence would exceed the model's
// context length.
var ErrContext = errors.New("model: sequence longer than the context")

// ErrToken is returned (wrapped) for a token id outside the vocabulary.
var ErrToken = errors.New("model: token id out of range")

// NewSession returns an empty session.
func (m *Model) NewSession() *Session {
	return &Session{m: m, seq: m.res.NewSeq()}
}

// Close releases the session's device memory now (a GPU's KV cache)
// rather than when the session is garbage collected. It is optional. On
// the CPU it gives the KV cache's blocks back to the model, for its next
// sessions to write into memory already touched (cheaper than fresh
// memory: see blockPool); the session is then empty. Forks made before
// keep what they share with it.
func (s *Session) Close() error { return s.seq.Close() }

// Len returns the number of tokens in the session's cache.
func (s *Session) Len() int { return s.seq.Len() }

// Tokens returns the tokens the session has consumed. The slice must not
// be modified; it is valid until the next Forward or Truncate.
func (s *Session) Tokens() []int { return s.tokens[:s.seq.Len()] }

// Model returns the session's model.
func (s *Session) Model() *Model { return s.m }

// Last returns the logits after the session's last token (nil when the
// session is empty or was truncated). The slice is owned by the session
// and overwritten by the next Forward.
func (s *Session) Last() []float32 { return s.last }

// Fork returns a new session continuing from the same tokens, with the
// same KV cache (on the CPU shared copy-on-write, see Cache.Fork; on a GPU
// copied on the device) and a copy of the last logits, so computing a long
// prefix once and forking per step or per user costs no recomputation. A
// device that fails to fork reports it on the fork's first Forward.
func (s *Session) Fork() *Session {
	f := &Session{m: s.m, seq: s.seq.Fork(), tokens: append([]int(nil), s.Tokens()...)}
	if s.last != nil {
		f.last = append([]float32(nil), s.last...)
	}
	return f
}

// Truncate rolls the session back to its first n tokens. The last logits
// are forgotten unless n is the current length.
func (s *Session) Truncate(n int) error {
	if n == s.seq.Len() {
		return nil
	}
	if err := s.seq.Truncate(n); err != nil {
		return err
	}
	s.tokens = s.tokens[:n]
	s.last = nil
	return nil
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
	if err := s.check(tokens); err != nil {
		return nil, err
	}
	start := s.seq.Len()
	rows := 1
	if all {
		rows = len(tokens)
	}
	out := s.buffer(rows)
	for done := 0; done < len(tokens); {
		n := min(maxChunk, len(tokens)-done)
		var dst []float32
		switch {
		case all:
			dst = out[done*c.VocabSize : (done+n)*c.VocabSize]
		case done+n == len(tokens):
			dst = out
		}
		if err := s.step(ctx, tokens[done:done+n], dst, all); err != nil {
			s.seq.Truncate(start) // drop the partial chunks; never fails here
			s.last = nil
			return nil, err
		}
		done += n
	}
	s.tokens = append(s.tokens[:start], tokens...)
	s.last = out[len(out)-c.VocabSize:]
	return out, nil
}

// check returns the error of appending tokens to s, before any work: none,
// an id outside the vocabulary (ErrToken) or more than the context
// (ErrContext).
func (s *Session) check(tokens []int) error {
	c := &s.m.cfg
	if len(tokens) == 0 {
		return errors.New("model: forward of no tokens")
	}
	for i, t := range tokens {
		if t < 0 || t >= c.VocabSize {
			return fmt.Errorf("%w: token %d at index %d, vocabulary %d", ErrToken, t, i, c.VocabSize)
		}
	}
	if n := s.seq.Len(); n+len(tokens) > c.MaxPositionEmbeddings {
		return fmt.Errorf("%w: %d cached + %d new tokens > %d", ErrContext, n, len(tokens), c.MaxPositionEmbeddings)
	}
	return nil
}

// buffer returns the session's logits buffer sized for rows rows.
func (s *Session) buffer(rows int) []float32 {
	need := rows * s.m.cfg.VocabSize
	if cap(s.logits) < need {
		s.logits = make([]float32, need)
	}
	return s.logits[:need]
}

// step runs one chunk of n ≤ maxChunk tokens of s through the forward
// pass. When dst is non-nil it receives the logits of every row (all) or
// of the last row.
func (s *Session) step(ctx context.Context, tokens []int, dst []float32, all bool) error {
	pos0 := s.seq.Len()
	s.seq.Reserve(len(tokens))
	rows := 0
	switch {
	case dst == nil:
	case all:
		rows = len(tokens)
	default:
		rows = 1
	}
	return forward(ctx, &s.m.cfg, s.seq, tokens, pos0, dst, rows)
}

// forward runs the rows of tokens, at positions pos0 … (a Batch's rows at
// their own), through every layer and, when rows > 0, the logits of the
// last rows rows into dst: the forward pass, written once for every device
// and for a sequence and a batch alike.
func forward(ctx context.Context, c *Config, q Pass, tokens []int, pos0 int, dst []float32, rows int) error {
	n := len(tokens)
	q.Embed(tokens)
	for l := range c.NumHiddenLayers {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("model: forward: %w", err)
		}
		q.RMSNorm(ActXB, ActX, n, l, AttnNorm)
		q.MatMul(ActQKV, ActXB, n, l, QKV)
		q.RoPE(l, pos0, n)
		q.Attention(l, pos0, n)
		q.MatMul(ActTmp, ActAtt, n, l, O)
		q.Add(ActX, ActTmp, n)
		q.RMSNorm(ActXB, ActX, n, l, FFNNorm)
		q.MatMul(ActGU, ActXB, n, l, GateUp)
		q.SwiGLU(n)
		q.MatMul(ActTmp, ActFFN, n, l, Down)
		q.Add(ActX, ActTmp, n)
		if err := q.Err(); err != nil {
			return fmt.Errorf("model: layer %d: %w", l, err)
		}
	}
	if rows > 0 {
		q.Logits(dst, n, rows)
	}
	if err := q.Err(); err != nil {
		return fmt.Errorf("model: output head: %w", err)
	}
	return nil
}
