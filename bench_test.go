package ndbg_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/sample"
)

// benchModel is the embedded default model, or a random model of its shape
// when this build has none.
func benchModel(b *testing.B) *ndbg.Model {
	m, err := ndbg.Open(context.Background(), ndbg.Options{})
	if errors.Is(err, ndbg.ErrNoDefaultModel) {
		b.Log("no embedded default model: a random tiny model")
		return randomModel(b, 1)
	}
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	return m
}

var benchActions = []dsl.Action{{Kind: dsl.StepOver}, {Kind: dsl.StepOver}, {Kind: dsl.StepInto},
	{Kind: dsl.StepInto}, {Kind: dsl.StepOver}, {Kind: dsl.StepReturn}, {Kind: dsl.InvStepOver}, {Kind: dsl.StepInto}}

// runActions plays benchActions on a fresh session; it returns each
// action's latency and the number of tokens of the predicted frames.
func runActions(b *testing.B, m *ndbg.Model, src []byte) ([]time.Duration, int) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Neural(m, sample.Params{}), string(src), "f([3, None, 4])")
	require.NoError(b, err)
	defer s.Close()
	var lat []time.Duration
	for _, a := range benchActions {
		t0 := time.Now()
		_, err := s.Do(ctx, a)
		lat = append(lat, time.Since(t0))
		if err != nil {
			require.ErrorIs(b, err, ndbg.ErrFinished)
			break
		}
	}
	text, spans, err := s.Trajectory().EncodeSpans()
	require.NoError(b, err)
	tokens := 0
	for _, sp := range spans {
		tokens += len(m.Tokenizer().Encode(text[sp.Start:sp.End]))
	}
	return lat, tokens
}

// BenchmarkNeuralAction: one action on the default model with the program
// prefix cached (goal: p50 ≤ 20 ms on these CPUs); the cost of constrained
// decoding against decoding the same number of frame tokens freely, one
// forward pass and one unconstrained sample each (goal: at most 2% slower;
// jump-forward can make it faster); and eight concurrent sessions on one
// model against one alone. Session start (python evaluates the arguments)
// is not timed.
func BenchmarkNeuralAction(b *testing.B) {
	m := benchModel(b)
	src, err := os.ReadFile("examples/mean.py")
	require.NoError(b, err)
	runActions(b, m, src) // warm: the program's prefix is cached from here on
	var lat []time.Duration
	var constrained time.Duration
	tokens := 0
	b.ResetTimer()
	for range b.N {
		l, n := runActions(b, m, src)
		lat = append(lat, l...)
		tokens += n
		for _, d := range l {
			constrained += d
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "ms/action-p50")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "ms/action-p99")
	b.ReportMetric(float64(len(lat))/constrained.Seconds(), "actions/s")
	b.ReportMetric(float64(tokens)/float64(len(lat)), "frame-tokens/action")

	// The baseline: as many tokens, each one forward pass and a free sample,
	// at the same context length (after the program and a few frames).
	ctx := context.Background()
	smp, err := sample.New(sample.Params{})
	require.NoError(b, err)
	prefix := m.Tokenizer().Encode(dsl.BeginOfText + dsl.TraceContextStart + string(src) + dsl.FrameSep)
	sess := m.Engine().NewSession()
	_, err = sess.Forward(ctx, prefix, false)
	require.NoError(b, err)
	start := sess.Len()
	t1 := time.Now()
	restart := func() { // back to the prefix, with its last logits
		require.NoError(b, sess.Truncate(start-1))
		_, err := sess.Forward(ctx, prefix[len(prefix)-1:], false)
		require.NoError(b, err)
	}
	for range tokens {
		if sess.Len() >= start+200 {
			restart()
		}
		tok, err := smp.Sample(sess.Last())
		require.NoError(b, err)
		_, err = sess.Forward(ctx, []int{tok}, false)
		require.NoError(b, err)
	}
	free := time.Since(t1)
	b.ReportMetric(float64(constrained)/float64(free), "constrained/free")

	// Eight sessions at once on one model.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var busy time.Duration
	actions := 0
	t2 := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, _ := runActions(b, m, src)
			mu.Lock()
			actions += len(l)
			for _, d := range l {
				busy += d
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(actions)/time.Since(t2).Seconds(), "actions/s-8-sessions-wall")
}
