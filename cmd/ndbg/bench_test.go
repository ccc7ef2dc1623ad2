package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/model"
	"github.com/stretchr/testify/require"
)

// TestBenchShapes checks that `ndbg bench --shapes`, from which
// bench/llamacpp.sh writes llama.cpp's peer models, states each preset's
// shape exactly, and refuses a preset a plain llama GGUF could not match.
func TestBenchShapes(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--shapes", "--models", "34m,134m,1.8b"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	for i, name := range []string{"34m", "134m", "1.8b"} {
		var got modelShape
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &got))
		c, err := model.Preset(name)
		require.NoError(t, err)
		require.Equal(t, modelShape{Model: name, Hidden: c.HiddenSize, Layers: c.NumHiddenLayers, Heads: c.NumAttentionHeads, KVHeads: c.NumKeyValueHeads,
			HeadDim: c.HeadDim, FFN: c.IntermediateSize, Vocab: c.VocabSize, NormEps: float32(c.RMSNormEps), RopeTheta: c.RopeTheta, Context: c.MaxPositionEmbeddings}, got)
	}

	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"bench", "--shapes", "--models", "32b"}, &out, &errb)
	require.NotEqual(t, 0, code)
	require.Contains(t, errb.String(), "sliding windows or RoPE scaling")
}

// TestBenchJSON checks that --json prints one parseable line per
// measurement with the figures bench/llamacpp.sh reads.
func TestBenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--json", "--models", "tiny", "--dtypes", "f32", "--threads", "1",
		"--prefill", "8", "--decode", "2", "--reps", "1"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var r map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r))
	require.Equal(t, "tiny", r["model"])
	require.Equal(t, "F32", r["dtype"])
	require.Greater(t, r["prefill_tok_s"], 0.0)
	require.Greater(t, r["decode_tok_s"], 0.0)
}

// --sessions prints the sessions table; bad counts and --json with it are
// errors.
func TestBenchSessions(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--sessions", "1,2", "--models", "tiny", "--dtypes", "f32", "--threads", "1",
		"--prefill", "4", "--decode", "2", "--reps", "1"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Contains(t, out.String(), "| sessions |")
	require.Contains(t, out.String(), "| tiny | F32 | ")
	for _, args := range [][]string{{"--sessions", "0"}, {"--sessions", "x"}, {"--sessions", "2", "--json"}} {
		errb.Reset()
		code = run(context.Background(), append([]string{"bench", "--models", "tiny"}, args...), &out, &errb)
		require.NotEqual(t, 0, code, args)
		require.Contains(t, errb.String(), "session", args)
	}
}

// TestBenchMachine: `ndbg bench --machine` prints the machine's table alone
// (train/flops.py reads its FMA peak), one row per thread count.
func TestBenchMachine(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--machine", "--threads", "1"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Regexp(t, regexp.MustCompile(`(?m)^\| 1 \| [0-9.]+ \| [0-9.]+ \|$`), out.String())
	require.NotContains(t, out.String(), "| model |")
}

// --busy prints the busy-machine table; it goes with neither --json nor
// --sessions.
func TestBenchBusy(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"bench", "--busy", "--models", "tiny", "--dtypes", "f32", "--threads", "1",
		"--prefill", "4", "--decode", "2", "--reps", "1"}, &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Contains(t, out.String(), "| busy / idle |")
	for _, args := range [][]string{{"--busy", "--json"}, {"--busy", "--sessions", "2"}} {
		code := run(context.Background(), append([]string{"bench", "--models", "tiny"}, args...), &out, &errOut)
		require.NotEqual(t, 0, code, args)
	}
}
