package model

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TokenSampler picks the next token from a row of logits.
// *sample.Sampler satisfies it; a constrained decoder can wrap one.
type TokenSampler interface {
	Sample(logits []float32) (int, error)
}

// GenerateOptions control Generate.
type GenerateOptions struct {
	// MaxTokens bounds the tokens generated (≤ 0: until Stop or the
	// context is full).
	MaxTokens int
	// Stop, when set, ends generation after a token for which it returns
	// true (that token is still returned and streamed), e.g. an end-of-text
	// or frame separator.
	Stop func(token int) bool
	// OnToken, when set, receives each token as soon as it is sampled; an
	// error from it ends generation and is returned.
	OnToken func(token int) error
}

// Generation is what Generate produced, with timings for throughput
// reports.
type Generation struct {
	Tokens  []int
	Prompt  int           // tokens fed before the first sample
	Prefill time.Duration // time to feed the prompt
	Decode  time.Duration // time spent sampling and feeding generated tokens
}

// Generate feeds prompt to s (a batched prefill) and then samples tokens one
// at a time until MaxTokens, Stop or the end of the context. An empty
// prompt continues from s.Last(), e.g. after Fork.
//
// The last generated token is sampled but not fed, so afterwards s holds
// the prompt and every generated token but the last; pass that token at
// the head of the next prompt to continue. On error (a cancelled ctx, a
// sampler or OnToken error, a full context: ErrContext) the tokens
// generated so far are returned with it.
func Generate(ctx context.Context, s *Session, prompt []int, smp TokenSampler, opt GenerateOptions) (Generation, error) {
	g := Generation{Prompt: len(prompt)}
	t0 := time.Now()
	logits := s.Last()
	if len(prompt) > 0 {
		var err error
		if logits, err = s.Forward(ctx, prompt, false); err != nil {
			return g, fmt.Errorf("model: generate: prompt: %w", err)
		}
	} else if logits == nil {
		return g, errors.New("model: generate: empty prompt and no logits to continue from")
	}
	t1 := time.Now()
	g.Prefill = t1.Sub(t0)
	ctxLen := s.m.cfg.MaxPositionEmbeddings
	for opt.MaxTokens <= 0 || len(g.Tokens) < opt.MaxTokens {
		if err := ctx.Err(); err != nil {
			g.Decode = time.Since(t1)
			return g, fmt.Errorf("model: generate: %w", err)
		}
		tok, err := smp.Sample(logits)
		if err != nil {
			g.Decode = time.Since(t1)
			return g, fmt.Errorf("model: generate: sample: %w", err)
		}
		g.Tokens = append(g.Tokens, tok)
		if opt.OnToken != nil {
			if err := opt.OnToken(tok); err != nil {
				g.Decode = time.Since(t1)
				return g, err
			}
		}
		if opt.Stop != nil && opt.Stop(tok) || len(g.Tokens) == opt.MaxTokens {
			break
		}
		if s.Len() >= ctxLen {
			g.Decode = time.Since(t1)
			return g, fmt.Errorf("model: generate: %w (%d tokens)", ErrContext, ctxLen)
		}
		if logits, err = s.Forward(ctx, []int{tok}, false); err != nil {
			g.Decode = time.Since(t1)
			return g, fmt.Errorf("model: generate: %w", err)
		}
	}
	g.Decode = time.Since(t1)
	return g, nil
}
