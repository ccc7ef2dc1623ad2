package model

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/sample"
)

// Greedy generation must reproduce the PyTorch reference's continuation.
func TestGenerateGreedyMatchesReference(t *testing.T) {
	dir := "testdata/cwm_sliding_f32"
	ref := readReference(t, dir)
	m, err := Load(context.Background(), dir, Options{Threads: 1})
	require.NoError(t, err)
	defer m.Close()
	smp, err := sample.New(sample.Params{})
	require.NoError(t, err)
	var streamed []int
	n := len(ref.tokens) - ref.prompt
	g, err := Generate(context.Background(), m.NewSession(), ref.tokens[:ref.prompt], smp,
		GenerateOptions{MaxTokens: n, OnToken: func(tok int) error { streamed = append(streamed, tok); return nil }})
	require.NoError(t, err)
	assert.Equal(t, ref.tokens[ref.prompt:], g.Tokens)
	assert.Equal(t, g.Tokens, streamed)
	assert.Equal(t, ref.prompt, g.Prompt)
}

func TestGenerateStopsAndContinues(t *testing.T) {
	m := tinyModel(t, kernels.F32, 64)
	smp, err := sample.New(sample.Params{})
	require.NoError(t, err)
	s := m.NewSession()
	full, err := Generate(context.Background(), s.Fork(), []int{1, 2, 3}, smp, GenerateOptions{MaxTokens: 10})
	require.NoError(t, err)
	require.Len(t, full.Tokens, 10)

	// Stop after the 4th token, then continue from a fork of the session.
	stopAt := full.Tokens[3]
	count := 0
	g, err := Generate(context.Background(), s, []int{1, 2, 3}, smp, GenerateOptions{MaxTokens: 10,
		Stop: func(tok int) bool { count++; return count == 4 && tok == stopAt }})
	require.NoError(t, err)
	assert.Equal(t, full.Tokens[:4], g.Tokens)
	assert.Equal(t, 3+3, s.Len()) // the last token is not fed
	rest, err := Generate(context.Background(), s.Fork(), []int{g.Tokens[3]}, smp, GenerateOptions{MaxTokens: 6})
	require.NoError(t, err)
	assert.Equal(t, full.Tokens[4:], rest.Tokens)

	// The context fills: the tokens so far come back with ErrContext.
	g, err = Generate(context.Background(), m.NewSession(), []int{1}, smp, GenerateOptions{})
	assert.ErrorIs(t, err, ErrContext)
	assert.Len(t, g.Tokens, 64)

	// Streaming errors and cancellation end generation.
	boom := errors.New("boom")
	_, err = Generate(context.Background(), m.NewSession(), []int{1}, smp,
		GenerateOptions{OnToken: func(int) error { return boom }})
	assert.ErrorIs(t, err, boom)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Generate(ctx, m.NewSession(), []int{1}, smp, GenerateOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = Generate(context.Background(), m.NewSession(), nil, smp, GenerateOptions{})
	assert.Error(t, err)
}
