package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDataCommand(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"data", "--n", "6", "--seed", "3", "--out", dir, "--traj", "2", "--shard", "4", "--families", "lists,strings"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, out.String(), "trajectories")
	assert.Contains(t, out.String(), "tokens        not counted")
	assert.Contains(t, errb.String(), "6/6 programs", "plain progress line when stderr is not a terminal")
	shards, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	assert.Len(t, shards, 2)
	assert.FileExists(t, filepath.Join(dir, "stats.json"))

	errb.Reset()
	code = run(context.Background(), []string{"data", "--n", "2", "--out", dir, "--families", "nope"}, &out, &errb)
	assert.Equal(t, 2, code, "a usage error")
	assert.Contains(t, errb.String(), `--families: unknown "nope"`)
}
