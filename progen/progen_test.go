package progen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type outcome struct {
	OK      bool   `json:"ok"`
	Exc     string `json:"exc"`
	Msg     string `json:"msg"`
	Events  int    `json:"events"`
	ReprLen int    `json:"repr_len"`
}

// runAll runs every program in one python3 process (testdata/run.py).
func runAll(t *testing.T, progs []*Program) []outcome {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, p := range progs {
		require.NoError(t, enc.Encode(map[string]string{"source": p.Source, "call": p.Call}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/run.py")
	cmd.Env = []string{"PYTHONHASHSEED=0"}
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, len(progs))
	res := make([]outcome, len(progs))
	for i, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &res[i]))
	}
	return res
}

func TestSameSeedSameProgram(t *testing.T) {
	for seed := range uint64(50) {
		a, err := Generate(seed, nil)
		require.NoError(t, err)
		b, err := Generate(seed, nil)
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
	a, _ := Generate(1, nil)
	b, _ := Generate(2, nil)
	require.NotEqual(t, a.Source, b.Source)
}

func TestFamiliesSelectable(t *testing.T) {
	for _, fam := range Families() {
		require.NotEmpty(t, FamilyDoc(fam))
		for seed := range uint64(5) {
			p, err := Generate(seed, []string{fam})
			require.NoError(t, err)
			require.Equal(t, fam, p.Family)
		}
	}
	_, err := Generate(1, []string{"nope"})
	require.Error(t, err)
}

// TestProgramsRunAsIntended runs a few hundred programs of every family with
// real CPython: each must return, or raise only an exception its generator
// declared, within a short trace. It logs diversity statistics.
func TestProgramsRunAsIntended(t *testing.T) {
	const n = 2000
	var progs []*Program
	for seed := range uint64(n) {
		p, err := Generate(seed+1000, nil)
		require.NoError(t, err)
		progs = append(progs, p)
	}
	res := runAll(t, progs)

	cons := map[string]int{}
	fams := map[string]int{}
	var events []int
	raised, failed := 0, 0
	for i, p := range progs {
		r := res[i]
		ctx := fmt.Sprintf("seed %d family %s\n%s# %s\n%+v", p.Seed, p.Family, p.Source, p.Call, r)
		if !r.OK {
			if !assert.Contains(t, p.Raises, r.Exc, "unintended exception: "+ctx) {
				failed++
				if failed > 5 {
					t.FailNow()
				}
			}
			raised++
		}
		assert.LessOrEqual(t, r.Events, 2000, ctx)
		events = append(events, r.Events)
		fams[p.Family]++
		for _, c := range p.Constructs {
			cons[c]++
		}
	}
	sort.Ints(events)
	var keys []string
	for k := range cons {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("families: %v", fams)
	t.Logf("trace events: min %d p10 %d median %d p90 %d max %d", events[0], events[n/10], events[n/2], events[n*9/10], events[n-1])
	t.Logf("raised (declared) exceptions: %d of %d", raised, n)
	t.Logf("%d distinct constructs:", len(keys))
	for _, k := range keys {
		t.Logf("  %-22s %d", k, cons[k])
	}
	assert.GreaterOrEqual(t, len(keys), 100, "constructs")
	assert.Positive(t, raised, "some programs raise as declared")
	assert.Less(t, raised, n/4)
	assert.Len(t, fams, len(Families())-1, "every family but long, which is drawn only by name")
	assert.Zero(t, fams["long"])
	assert.GreaterOrEqual(t, events[n/2], 15, "median trace length")
	assert.LessOrEqual(t, events[n/2], 300, "median trace length")
}

// TestLongPrograms runs long programs with real CPython: each returns or
// raises only what its generator declared, within the event limit of `ndbg
// data` (5,000), and its source is within the family's length bounds.
func TestLongPrograms(t *testing.T) {
	const n = 120
	var progs []*Program
	lines := 0
	for i := range n {
		p, err := Generate(uint64(i)+5000, []string{"long"})
		require.NoError(t, err)
		require.Equal(t, "long", p.Family)
		require.Equal(t, uint64(i)+5000, p.Seed)
		assert.GreaterOrEqual(t, len(p.Source), 4400, p.Source)
		assert.LessOrEqual(t, len(p.Source), 5100, p.Source)
		assert.GreaterOrEqual(t, strings.Count(p.Source, "\ndef "), 6, "helpers f calls: %s", p.Source)
		lines += strings.Count(p.Source, "\n")
		progs = append(progs, p)
	}
	t.Logf("mean %d lines", lines/n)
	for i, r := range runAll(t, progs) {
		p := progs[i]
		ctx := fmt.Sprintf("seed %d\n%s# %s\n%+v", p.Seed, p.Source, p.Call, r)
		if !r.OK {
			assert.Contains(t, p.Raises, r.Exc, "unintended exception: "+ctx)
		}
		assert.LessOrEqual(t, r.Events, 5000, ctx)
	}
}

// TestFamilyWeights: a family named twice is drawn about twice as often.
func TestFamilyWeights(t *testing.T) {
	n := map[string]int{}
	for seed := range uint64(3000) {
		p, err := Generate(seed, []string{"strings", "lists", "lists"})
		require.NoError(t, err)
		n[p.Family]++
	}
	assert.InDelta(t, 2.0, float64(n["lists"])/float64(n["strings"]), 0.25, "%v", n)
}
