package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestDataPythonAndUnsandboxed: --python names the tracing interpreter (its
// version lands in stats.json; one that cannot run is an error naming it),
// and --unsandboxed traces without bubblewrap, as the GPU machine must
// (train/gpu), with the same output.
func TestDataPythonAndUnsandboxed(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	out, err := exec.Command(py, "-S", "-c", "import os, sys; print(os.path.realpath(sys.executable)); print('%d.%d.%d' % sys.version_info[:3])").Output()
	require.NoError(t, err)
	lines := strings.Fields(string(out))
	require.Len(t, lines, 2)
	exe, version := lines[0], lines[1]

	base := []string{"data", "--n", "5", "--seed", "4", "--families", "lists,strings", "--traj", "2"}
	sandboxed, unsandboxed := t.TempDir(), t.TempDir()
	var o, e bytes.Buffer
	code := run(context.Background(), append(base, "--python", exe, "--out", sandboxed), &o, &e)
	if code != 0 && strings.Contains(e.String(), "sandbox") {
		t.Skipf("no sandbox here: %s", e.String())
	}
	require.Equal(t, 0, code, e.String())
	e.Reset()
	code = run(context.Background(), append(base, "--python", exe, "--unsandboxed", "--out", unsandboxed), &o, &e)
	require.Equal(t, 0, code, e.String())
	for _, dir := range []string{sandboxed, unsandboxed} {
		st, err := os.ReadFile(filepath.Join(dir, "stats.json"))
		require.NoError(t, err)
		var s struct{ Python string }
		require.NoError(t, json.Unmarshal(st, &s))
		assert.True(t, strings.HasPrefix(s.Python, version+" "), "stats.json python %q, want %s", s.Python, version)
	}
	a, err := os.ReadFile(filepath.Join(sandboxed, "shard-00000.jsonl"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(unsandboxed, "shard-00000.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b), "the sandbox changes nothing of the traces")

	e.Reset()
	missing := filepath.Join(t.TempDir(), "no-such-python")
	code = run(context.Background(), append(base, "--python", missing, "--unsandboxed", "--out", t.TempDir()), &o, &e)
	assert.Equal(t, 1, code)
	assert.Contains(t, e.String(), "no-such-python")
}
