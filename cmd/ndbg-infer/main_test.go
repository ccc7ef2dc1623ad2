package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/weights"
)

// writeRandomCheckpoint writes a small random LLaMA checkpoint whose
// vocabulary matches the tokenizer fixture, with that tokenizer beside it.
func writeRandomCheckpoint(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tokJSON, err := os.ReadFile("../../tokenizer/testdata/code-llama3.tokenizer.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tokJSON, 0o644))
	cfgJSON := `{"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
		"num_attention_heads": 2, "vocab_size": 4096, "max_position_embeddings": 128, "eos_token_id": 1}`
	cfg, err := weights.ParseConfig([]byte(cfgJSON))
	require.NoError(t, err)
	ts, err := weights.RandomLlama(cfg, weights.BF16, 1)
	require.NoError(t, err)
	require.NoError(t, weights.WriteCheckpoint(dir, cfg, ts, 0, nil))
	return dir
}

func TestGenerateText(t *testing.T) {
	dir := writeRandomCheckpoint(t)
	gen := func(args ...string) (string, string) {
		var out, errb bytes.Buffer
		if args[0] == "generate" { // the mode comes first
			args = append([]string{"generate", "--model", dir, "--threads", "1"}, args[1:]...)
		} else {
			args = append([]string{"--model", dir, "--threads", "1"}, args...)
		}
		code := run(context.Background(), args, &out, &errb)
		require.Equal(t, 0, code, errb.String())
		return out.String(), errb.String()
	}
	a, stats := gen("--prompt", "def f(x):", "--max-tokens", "12", "--temperature", "0.9", "--top-p", "0.9", "--seed", "5")
	assert.NotEmpty(t, a)
	assert.Contains(t, stats, "tok/s")
	b, _ := gen("generate", "--prompt", "def f(x):", "--max-tokens", "12", "--temperature", "0.9", "--top-p", "0.9", "--seed", "5")
	assert.Equal(t, a, b, "same seed, same text")
	g1, _ := gen("--prompt", "def f(x):", "--max-tokens", "12")
	g2, _ := gen("--prompt", "def f(x):", "--max-tokens", "12", "--seed", "9")
	assert.Equal(t, g1, g2, "greedy ignores the seed")
}

func TestGenerateTokensAndErrors(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--model", "../../model/testdata/mha_f32", "--tokens", "1,2,3", "--max-tokens", "5"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Len(t, strings.Fields(out.String()), 5)

	for _, args := range [][]string{
		{"--prompt", "x"}, // no model
		{"--model", "../../model/testdata/mha_f32", "--prompt", "x"}, // no tokenizer
		{"--model", "../../model/testdata/mha_f32", "--tokens", "1,300"},
		{"--model", "../../model/testdata/mha_f32", "--tokens", "1", "--top-p", "2"},
		{"--model", "/nonexistent", "--tokens", "1"},
	} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 1, run(context.Background(), args, &out, &errb), "%v", args)
		assert.NotEmpty(t, errb.String())
	}
	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "generate")
}
