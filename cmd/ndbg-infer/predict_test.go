package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const sumSource = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"

func TestPredictReal(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	runJSON := func(args ...string) map[string]any {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		require.Equal(t, 0, code, errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
		return v
	}
	st := runJSON("--program", prog, "--call", "f([1, 2])", "--backend", "real", "--actions", "step_into step_over", "--action", "breakpoint:4")
	require.Equal(t, "line", st["event"])
	require.EqualValues(t, 4, st["line"])
	require.Equal(t, map[string]any{"xs": "[1, 2]", "total": "0", "x": "1"}, st["locals"])

	cmp := runJSON("--program", prog, "--call", "f([1, 2])", "--backend", "real", "--action", "step_return", "--compare")
	require.Equal(t, "3", cmp["real"].(map[string]any)["value"])
	require.Equal(t, true, cmp["match"].(map[string]any)["all"])

	end := runJSON("--program", prog, "--call", "f([])", "--backend", "real", "--action", "continue")
	require.Equal(t, "end", end["event"])

	for _, bad := range [][]string{
		{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "jump"},
		{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "breakpoint:1000"},
		{"--program", prog, "--call", "g(1)", "--backend", "real"},
		{"--program", prog, "--call", "f([1])", "--backend", "real", "--action", "inv_step_into"},
		{"--program", filepath.Join(t.TempDir(), "missing.py"), "--call", "f(1)", "--backend", "real"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 1, run(context.Background(), bad, &out, &errb), "%v", bad)
		require.NotEmpty(t, errb.String())
	}
}

func TestCRUXEvalModeReal(t *testing.T) {
	item := filepath.Join(t.TempDir(), "item.json")
	require.NoError(t, os.WriteFile(item, []byte(`{"id":"t","code":"def f(xs):\n    return sorted(xs)[::-1]\n","input":"[2, 3, 1]","output":"[3, 2, 1]"}`), 0o644))
	for _, args := range [][]string{
		{"--cruxeval-o", "--item", item, "--backend", "real"},
		{"--cruxeval-o", "--item", item, "--backend", "real", "--strategy", "breakpoint"},
		{"--cruxeval-i", "--item", item, "--backend", "real"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &out, &errb), errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v))
		require.Equal(t, true, v["pass"], "%v: %s", args, out.String())
	}
	var out, errb bytes.Buffer
	require.Equal(t, 1, run(context.Background(), []string{"--cruxeval-o", "--cruxeval-i", "--item", item}, &out, &errb))
}

// TestPredictShowsUserLine: "source" is the line as the user wrote it, not
// the prepared one (a repeated line gets "  # (2)" to make it unique).
func TestPredictShowsUserLine(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f(xs):\n    x = xs[0]\n    x = xs[0]\n    return x\n"), 0o644))
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"--program", prog, "--call", "f([1])", "--backend", "real",
		"--action", "breakpoint:3", "--compare"}, &out, &errb), errb.String())
	var v map[string]map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), out.String())
	require.EqualValues(t, 3, v["real"]["line"])
	require.Equal(t, "    x = xs[0]", v["real"]["source"])
	require.Equal(t, "    x = xs[0]", v["predicted"]["source"])
}
