package ndbg_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/testsupport/testmodel"
	"github.com/ndbg/ndbg/sample"
)

// writeModelDir writes a random BF16 checkpoint in small shards with a DSL
// tokenizer: a model directory as train/train.py exports it.
func writeModelDir(t *testing.T) string {
	dir := t.TempDir()
	testmodel.WriteDir(t, dir, 200<<10)
	return dir
}

// TestOpenDirAndFS loads one sharded checkpoint from a directory and from
// a file system (the embedded path) and checks both predict the same.
func TestOpenDirAndFS(t *testing.T) {
	ctx := context.Background()
	dir := writeModelDir(t)
	shards, _ := filepath.Glob(filepath.Join(dir, "model-*.safetensors"))
	require.Greater(t, len(shards), 1, "the checkpoint is sharded")

	fromDir, err := ndbg.Open(ctx, ndbg.Options{Dir: dir, Threads: 1})
	require.NoError(t, err)
	defer fromDir.Close()
	fromFS, err := ndbg.OpenFS(ctx, os.DirFS(dir), "test", ndbg.Options{Threads: 1})
	require.NoError(t, err)
	defer fromFS.Close()

	predict := func(m *ndbg.Model) []ndbg.State {
		s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), buggy, "f([1, None, 4])")
		require.NoError(t, err)
		var out []ndbg.State
		for range 3 {
			st, err := s.StepInto(ctx)
			if err != nil {
				require.ErrorIs(t, err, ndbg.ErrFinished)
				break
			}
			out = append(out, st)
		}
		return out
	}
	require.Equal(t, predict(fromDir), predict(fromFS))

	_, err = ndbg.OpenFS(ctx, os.DirFS(t.TempDir()), "empty", ndbg.Options{})
	require.Error(t, err)
	require.NoError(t, os.Remove(shards[0]))
	_, err = ndbg.Open(ctx, ndbg.Options{Dir: dir})
	require.Error(t, err, "a missing shard")
}
