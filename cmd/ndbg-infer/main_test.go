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
		{"--model", "../../model/testdata/mha_f32", "--prompt", "x"}, // no tokenizer
		{"--model", "../../model/testdata/mha_f32", "--tokens", "1,300"},
		{"--model", "/nonexistent", "--tokens", "1"},
	} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 1, run(context.Background(), args, &out, &errb), "%v", args)
		assert.NotEmpty(t, errb.String())
	}
	// Usage errors exit 2, saying what is wrong (each exited 1 before).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"generate", "--prompt", "hi"}, "need --model DIR"},
		{[]string{"--prompt", "x"}, "need --model DIR"},
		{[]string{"--model", "m"}, "need one of --prompt TEXT and --tokens"},
		{[]string{"--model", "m", "--prompt", "x", "--tokens", "1"}, "need one of --prompt TEXT and --tokens"},
		{[]string{"--model", "m", "--tokens", "1,a"}, `--tokens: "a" is not a token id`},
		{[]string{"--model", "m", "--tokens", "1", "--max-tokens", "0"}, "--max-tokens 0: want at least 1"},
		{[]string{"--model", "../../model/testdata/mha_f32", "--tokens", "1", "--top-p", "2"}, "top"},
		{[]string{"generate", "--model", "m", "--prompt", "x", "extra"}, "unexpected arguments"},
		{[]string{"bogusmode"}, `unknown mode "bogusmode"`},
		{[]string{"--cruxeval-o", "--item", "x.json", "--strategy", "guess"}, `--strategy: unknown "guess"`},
		{[]string{"--program", "p.py", "--call", "f(1)", "--action", "jump"}, "--action: "},
	} {
		out.Reset()
		errb.Reset()
		assert.Equal(t, 2, run(context.Background(), c.args, &out, &errb), "%v: %s", c.args, errb.String())
		assert.Contains(t, errb.String(), c.want, "%v", c.args)
	}
	// Every mode's help names its flags with one-word arguments.
	for _, m := range modes() {
		out.Reset()
		errb.Reset()
		require.Equal(t, 0, run(context.Background(), []string{m.name, "-h"}, &out, &errb), m.name)
		assert.True(t, strings.HasPrefix(errb.String(), "usage: "), "%s: %s", m.name, errb.String())
		for _, l := range strings.Split(errb.String(), "\n") {
			if strings.HasPrefix(l, "  -") {
				assert.Regexp(t, `^  -[a-z0-9-]+( [A-Za-z0-9]+)?$`, l, m.name)
			}
		}
	}
	out.Reset()
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, &out, &errb))
	assert.Contains(t, out.String(), "generate")
}
