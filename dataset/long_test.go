package dataset

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ndbg/ndbg/tokenizer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLongFamilyLengths traces programs of progen's long family with real
// CPython and counts their trajectories' tokens with the default model's
// tokenizer: every program must give trajectories, none shorter than 1,024
// tokens, and most between 1,500 and 2,048 (the default context), which is
// what the family is for: training the positions short programs never reach.
func TestLongFamilyLengths(t *testing.T) {
	needPython(t)
	tok, err := tokenizer.Load(filepath.Join("..", "weights", "default", "tokenizer.json"))
	require.NoError(t, err)
	dir := t.TempDir()
	const n = 24
	st, err := Run(context.Background(), Config{N: n, Seed: 12, Families: []string{"long"}, OutDir: dir, Workers: 2, Tokenizer: tok})
	require.NoError(t, err)
	require.Empty(t, st.Failures)
	require.Equal(t, n, st.Programs)
	recs, _ := readShards(t, dir)
	programs := map[string]bool{}
	inRange, over := 0, 0
	for _, r := range recs {
		programs[r.Program] = true
		k := len(tok.Encode(r.Text))
		assert.GreaterOrEqual(t, k, 1024, r.Text)
		switch {
		case k > 2048:
			over++
		case k >= 1500:
			inRange++
		}
	}
	require.Len(t, programs, n)
	t.Logf("%d trajectories: %d of 1,500-2,048 tokens, %d longer", len(recs), inRange, over)
	assert.GreaterOrEqual(t, 100*inRange, 50*len(recs), "share of 1,500-2,048 tokens")
	assert.LessOrEqual(t, 100*over, 20*len(recs), "share past the context")
}
