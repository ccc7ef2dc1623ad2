package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
)

// TestEvalCommand: the real debugger graded by `ndbg eval` scores 100%,
// with a report and a JSON summary; a build without a default model says so.
func TestEvalCommand(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	items := filepath.Join(dir, "items.jsonl")
	require.NoError(t, os.WriteFile(items, []byte(
		`{"code": "def f(xs):\n    ys = []\n    for x in xs:\n        if x % 2:\n            return ys\n        ys.append(x * 2)\n    return ys", "input": "[2, 4, 5, 6]", "output": "[4, 8]", "id": "a"}`+"\n"+
			`{"code": "def f(s, n=1):\n    return s * n", "input": "'ab', n=2", "output": "'abab'", "id": "b"}`+"\n"), 0o644))
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"eval", "--backend", "real", "--n", "3", "--families", "strings",
		"--items", items, "--report", filepath.Join(dir, "r")}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var sum struct {
		Next struct {
			Programs int `json:"programs"`
			All      struct{ N, State int }
		} `json:"next_state"`
		Crux struct {
			Scores map[string]struct {
				Pass1 float64 `json:"pass_at_1"`
			}
		} `json:"cruxeval"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &sum), out.String())
	assert.Equal(t, 5, sum.Next.Programs)
	assert.Positive(t, sum.Next.All.N)
	assert.Equal(t, sum.Next.All.N, sum.Next.All.State)
	require.Len(t, sum.Crux.Scores, 4)
	for s, p := range sum.Crux.Scores {
		assert.Equal(t, 100.0, p.Pass1, s)
	}
	assert.FileExists(t, filepath.Join(dir, "r", "report.md"))
	assert.FileExists(t, filepath.Join(dir, "r", "actions.png"))
	assert.Contains(t, errb.String(), "cruxeval inverse")

	if m, err := ndbg.Open(context.Background(), ndbg.Options{}); errors.Is(err, ndbg.ErrNoDefaultModel) {
		errb.Reset()
		assert.Equal(t, 1, run(context.Background(), []string{"eval", "--n", "1"}, &out, &errb))
		assert.Contains(t, errb.String(), "no embedded default model")
		assert.Contains(t, errb.String(), "--model DIR")
	} else if err == nil {
		m.Close()
	}
	errb.Reset()
	assert.Equal(t, 2, run(context.Background(), []string{"eval", "--backend", "nope"}, &out, &errb), "a usage error")
	assert.Contains(t, errb.String(), `--backend "nope": want neural, real`)
}

// writeRandomModel writes a model directory (config.json, safetensors,
// tokenizer.json with the DSL tokens) with random weights.
func writeRandomModel(t *testing.T, dir string) { testmodel.WriteDir(t, dir, 0) }

// TestEvalCommandModelDir: a neural evaluation of a model directory (random
// weights) runs to the end and writes its report.
func TestEvalCommandModelDir(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	mdir := filepath.Join(dir, "model")
	require.NoError(t, os.MkdirAll(mdir, 0o755))
	writeRandomModel(t, mdir)
	items := filepath.Join(dir, "items.jsonl")
	require.NoError(t, os.WriteFile(items, []byte(`{"code": "def f(s):\n    return s + 'x'", "input": "'a'", "output": "'ax'", "id": "a"}`+"\n"), 0o644))
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"eval", "--model", mdir, "--threads", "1", "--n", "2", "--max-pairs", "4",
		"--items", items, "--strategies", "step_return,inverse", "--report", filepath.Join(dir, "r"), "--json", filepath.Join(dir, "s.json")}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	js, err := os.ReadFile(filepath.Join(dir, "s.json"))
	require.NoError(t, err)
	assert.Contains(t, string(js), `"backend": "neural"`)
	assert.Contains(t, string(js), `"model": "`+mdir+`"`)
	assert.FileExists(t, filepath.Join(dir, "r", "report.md"))
}

// TestEvalItemsDev: `--items dev` evaluates CRUXEval's development split
// built into the binary, from any working directory (here one with nothing
// around it); the real debugger scores 100% on it.
func TestEvalItemsDev(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"eval", "--backend", "real", "--n", "0", "--items", "dev", "--limit", "3",
		"--tasks", "cruxeval", "--strategies", "step_return"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	var sum struct {
		Crux struct {
			Scores map[string]struct {
				Pass1   float64 `json:"pass_at_1"`
				Samples int     `json:"samples"`
			}
		} `json:"cruxeval"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &sum), out.String())
	require.Contains(t, sum.Crux.Scores, "step_return", out.String())
	assert.Equal(t, 100.0, sum.Crux.Scores["step_return"].Pass1)
	assert.Equal(t, 3, sum.Crux.Scores["step_return"].Samples)
}
