package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestExampleItem: the README's item, examples/item.json, is a valid
// CRUXEval-style item whose reference output is right: the real debugger
// passes it with every strategy.
func TestExampleItem(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	item := filepath.Join("..", "..", "examples", "item.json")
	for _, args := range [][]string{
		{"--cruxeval-o", "--item", item, "--backend", "real", "--strategy", "breakpoint"},
		{"--cruxeval-o", "--item", item, "--backend", "real", "--strategy", "step_return"},
		{"--cruxeval-i", "--item", item, "--backend", "real"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), args, &out, &errb), errb.String())
		var v map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &v))
		require.Equal(t, true, v["pass"], "%v: %s", args, out.String())
	}
}
