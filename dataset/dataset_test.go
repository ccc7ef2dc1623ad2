package dataset

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/trace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found")
	}
}

// readShards reads every record of the shards in dir, in shard order.
func readShards(t *testing.T, dir string) ([]Record, []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	require.NoError(t, err)
	var recs []Record
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var r Record
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
			recs = append(recs, r)
		}
		require.NoError(t, sc.Err())
		fh.Close()
	}
	return recs, files
}

func TestRunEndToEnd(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	st, err := Run(context.Background(), Config{N: 24, Seed: 7, OutDir: dir, ShardPrograms: 10, Trajectories: 3, Workers: 2})
	require.NoError(t, err)
	// A second, smaller run into the same directory replaces the first.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "shard-00009.jsonl"), []byte("stale\n"), 0o644))
	files, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	require.Len(t, files, 4)
	st, err = Run(context.Background(), Config{N: 24, Seed: 7, OutDir: dir, ShardPrograms: 10, Trajectories: 3, Workers: 2})
	require.NoError(t, err)
	recs, files := readShards(t, dir)
	require.Len(t, files, 3)
	require.Equal(t, 3, st.Shards)

	// Every line parses back as the DSL, and the stats add up.
	var bytes int64
	actions := map[string]int{}
	horizons := map[string]int{}
	programs := map[string]bool{}
	for _, r := range recs {
		tr, err := dsl.Parse(r.Text)
		require.NoError(t, err, r.Text)
		require.Len(t, tr.Steps, len(r.Actions))
		require.Len(t, r.Horizons, len(r.Actions))
		for i, s := range tr.Steps {
			assert.Equal(t, r.Actions[i], s.Action.String())
			actions[s.Action.Kind.String()]++
		}
		for _, h := range r.Horizons {
			horizons[Bucket(h)]++
		}
		bytes += int64(len(r.Text))
		programs[r.Program] = true
		assert.NotEmpty(t, r.Family)
	}
	assert.Equal(t, st.Trajectories, len(recs))
	assert.Equal(t, st.Bytes, bytes)
	assert.Equal(t, st.Actions, actions)
	assert.Equal(t, st.Horizons, horizons)
	assert.Equal(t, st.Programs, len(programs))
	fails := 0
	for _, n := range st.Failures {
		fails += n
	}
	assert.Equal(t, 24, st.Programs+fails)
	assert.Greater(t, st.Programs, 20, "failures: %v", st.Failures)
	assert.False(t, st.TokensCounted)
	assert.True(t, strings.HasPrefix(st.Python, "3."), st.Python)

	// stats.json holds the same stats.
	b, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	require.NoError(t, err)
	var onDisk Stats
	require.NoError(t, json.Unmarshal(b, &onDisk))
	assert.Equal(t, st.Trajectories, onDisk.Trajectories)
	assert.Equal(t, st.Bytes, onDisk.Bytes)
}

var addr = regexp.MustCompile(`0x[0-9a-f]+`)

func TestRunDeterministicAcrossWorkers(t *testing.T) {
	needPython(t)
	a, b := t.TempDir(), t.TempDir()
	_, err := Run(context.Background(), Config{N: 12, Seed: 3, OutDir: a, ShardPrograms: 5, Trajectories: 2, Workers: 1, Families: []string{"strings", "recursion"}})
	require.NoError(t, err)
	_, err = Run(context.Background(), Config{N: 12, Seed: 3, OutDir: b, ShardPrograms: 5, Trajectories: 2, Workers: 3, Families: []string{"strings", "recursion"}})
	require.NoError(t, err)
	for _, name := range []string{"shard-00000.jsonl", "shard-00001.jsonl", "shard-00002.jsonl"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		// CPython's repr of a comprehension's hidden iterator (".0") holds a
		// memory address; everything else must match byte for byte.
		require.Equal(t, addr.ReplaceAllString(string(x), "0x?"), addr.ReplaceAllString(string(y), "0x?"), name)
	}
	recs, _ := readShards(t, a)
	for _, r := range recs {
		assert.Contains(t, []string{"strings", "recursion"}, r.Family)
	}
}

func TestRunCancelKeepsCompleteShards(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := Run(ctx, Config{N: 200, Seed: 1, OutDir: dir, ShardPrograms: 4, Trajectories: 1, Workers: 2,
		Progress: func(done int, _ *Stats) {
			if done == 40 {
				cancel()
			}
		}})
	require.ErrorIs(t, err, context.Canceled)
	recs, files := readShards(t, dir)
	// Which shards are complete at cancellation depends on scheduling;
	// what was written must be whole and agree with the stats.
	require.Less(t, len(files), 50)
	assert.Equal(t, len(files), st.Shards)
	assert.Equal(t, st.Trajectories, len(recs))
	b, err := os.ReadFile(filepath.Join(dir, "stats.json"))
	require.NoError(t, err)
	var onDisk Stats
	require.NoError(t, json.Unmarshal(b, &onDisk))
	assert.Equal(t, st.Shards, onDisk.Shards)
	assert.Equal(t, st.Trajectories, onDisk.Trajectories)
	tmp, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	assert.Empty(t, tmp)
	for _, r := range recs {
		_, err := dsl.Parse(r.Text)
		require.NoError(t, err)
	}
}

func TestBucket(t *testing.T) {
	for h, want := range map[int]string{0: "0", 1: "1", 2: "2-3", 3: "2-3", 4: "4-7", 7: "4-7", 8: "8-15", 100: "64-127"} {
		assert.Equal(t, want, Bucket(h), h)
	}
}

// TestRunRefusesABrokenTracer: an interpreter that cannot run is one error
// naming it before any work (not every program counted as failed and an
// exit status of success), and a run in which no program produced a
// trajectory is an error too.
func TestRunRefusesABrokenTracer(t *testing.T) {
	needPython(t)
	missing := filepath.Join(t.TempDir(), "no-such-python3")
	dir := t.TempDir()
	_, err := Run(context.Background(), Config{N: 3, Seed: 1, OutDir: dir, Workers: 1,
		Limits: trace.Limits{Python: missing, Unsandboxed: true}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	shards, _ := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	assert.Empty(t, shards)

	never := func(*statetree.Tree, *rand.Rand) (*dsl.Trajectory, []int, error) {
		return nil, nil, errors.New("no trajectory")
	}
	st, err := Run(context.Background(), Config{N: 3, Seed: 1, OutDir: t.TempDir(), Workers: 1, Sampler: never})
	if err != nil && strings.Contains(err.Error(), "sandbox") {
		t.Skipf("no sandbox here: %v", err)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no program of 3 produced a trajectory")
	require.NotNil(t, st)
	assert.Equal(t, 3, sum(st.Failures))
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
