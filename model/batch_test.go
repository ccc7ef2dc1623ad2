package model

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/sample"
)

// batchSessions returns sessions of m at different lengths: empty, inside
// the first cache block, just past it, a fork of that one and a fork of it
// rolled back, so the batch mixes positions, blocks shared copy-on-write
// and the tiny preset's sliding window.
func batchSessions(t *testing.T, m *Model) []*Session {
	t.Helper()
	V := m.Config().VocabSize
	var ss []*Session
	for _, n := range []int{0, 3, 33} {
		s := m.NewSession()
		if n > 0 {
			_, err := s.Forward(context.Background(), seq(n, V), false)
			require.NoError(t, err)
		}
		ss = append(ss, s)
	}
	back := ss[2].Fork()
	require.NoError(t, back.Truncate(10))
	return append(ss, ss[2].Fork(), back)
}

// DecodeBatch gives every session the logits it gets decoding alone (the
// same sessions built on the same model, stepped by Forward), step after
// step, in F32 and BF16.
func TestDecodeBatchMatchesForward(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			m := tinyModel(t, dt, 0)
			requireBatchAsAlone(t, batchSessions(t, m), batchSessions(t, m))
		})
	}
}

// requireBatchAsAlone decodes five steps of batch with DecodeBatch and of
// alone (the same sessions built again) one session at a time with
// Forward, each session's next token its greedy choice, and requires the
// same logits (NMSE ≤ 1e-10), tokens and last logits of each.
func requireBatchAsAlone(t *testing.T, batch, alone []*Session) {
	t.Helper()
	next := make([]int, len(batch))
	for i := range next {
		next[i] = 5 + i
	}
	for step := range 5 {
		got, err := DecodeBatch(context.Background(), batch, next)
		require.NoError(t, err)
		for i, s := range alone {
			want, err := s.Forward(context.Background(), next[i:i+1], false)
			require.NoError(t, err)
			what := fmt.Sprintf("step %d session %d", step, i)
			require.LessOrEqual(t, nmse(got[i], want), 1e-10, what)
			require.Equal(t, s.Tokens(), batch[i].Tokens(), what)
			require.Equal(t, got[i], batch[i].Last(), what)
			next[i] = sample.Argmax(want)
		}
	}
}

// Sessions forked from one long prompt (nine whole cache blocks, frozen
// and shared), the prompted session itself and one of its own, decoded
// together, get the logits each gets alone, step after step, in F32 and
// BF16.
func TestDecodeBatchForksOfLongPrompt(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
		t.Run(dt.String(), func(t *testing.T) {
			m := tinyModel(t, dt, 512)
			build := func() []*Session {
				prompt := m.NewSession()
				_, err := prompt.Forward(context.Background(), seq(300, m.Config().VocabSize), false)
				require.NoError(t, err)
				other := m.NewSession()
				_, err = other.Forward(context.Background(), seq(40, m.Config().VocabSize), false)
				require.NoError(t, err)
				return []*Session{prompt.Fork(), prompt.Fork(), other, prompt, prompt.Fork()}
			}
			requireBatchAsAlone(t, build(), build())
		})
	}
}

// snapshot is what a failed DecodeBatch must leave unchanged.
type snapshot struct {
	tokens []int
	last   []float32
}

func snap(ss []*Session) []snapshot {
	out := make([]snapshot, len(ss))
	for i, s := range ss {
		out[i] = snapshot{append([]int(nil), s.Tokens()...), append([]float32(nil), s.Last()...)}
	}
	return out
}

// Invalid input is refused before any work, whichever session it concerns.
func TestDecodeBatchRefusesBadInput(t *testing.T) {
	m := tinyModel(t, kernels.F32, 40)
	other := tinyModel(t, kernels.F32, 40)
	ss := batchSessions(t, m)[:3]
	full := m.NewSession()
	_, err := full.Forward(context.Background(), seq(40, m.Config().VocabSize), false)
	require.NoError(t, err)
	before := snap(ss)
	V := m.Config().VocabSize
	for _, c := range []struct {
		name     string
		sessions []*Session
		tokens   []int
		is       error
	}{
		{"no sessions", nil, nil, nil},
		{"fewer tokens", ss, []int{1, 2}, nil},
		{"token out of range", ss, []int{1, V, 2}, ErrToken},
		{"negative token", ss, []int{1, 2, -1}, ErrToken},
		{"session twice", []*Session{ss[0], ss[1], ss[0]}, []int{1, 2, 3}, nil},
		{"nil session", []*Session{ss[0], nil}, []int{1, 2}, nil},
		{"another model", []*Session{ss[0], other.NewSession()}, []int{1, 2}, nil},
		{"context full", append([]*Session{full}, ss...), []int{1, 2, 3, 4}, ErrContext},
	} {
		_, err := DecodeBatch(context.Background(), c.sessions, c.tokens)
		require.Error(t, err, c.name)
		if c.is != nil {
			require.ErrorIs(t, err, c.is, c.name)
		}
		require.Equal(t, before, snap(ss), c.name)
	}
}

// A pass that fails (here a cancelled context) rolls every session back,
// and they decode correctly afterwards.
func TestDecodeBatchCancelledRollsBack(t *testing.T) {
	m := tinyModel(t, kernels.F32, 0)
	batch, alone := batchSessions(t, m), batchSessions(t, m)
	lens := make([]int, len(batch))
	for i, s := range batch {
		lens[i] = s.Len()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	next := []int{1, 2, 3, 4, 5}
	_, err := DecodeBatch(ctx, batch, next)
	require.ErrorIs(t, err, context.Canceled)
	for i, s := range batch {
		require.Equal(t, lens[i], s.Len())
		require.Equal(t, alone[i].Tokens(), s.Tokens())
		require.Nil(t, s.Last())
	}
	got, err := DecodeBatch(context.Background(), batch, next)
	require.NoError(t, err)
	for i, s := range alone {
		want, err := s.Forward(context.Background(), next[i:i+1], false)
		require.NoError(t, err)
		require.LessOrEqual(t, nmse(got[i], want), 1e-10, "session %d", i)
	}
}

// Sessions decoding on their own goroutines through one Batcher get the
// logits they get alone, in one batch per step, and the batching
// goroutine ends when they stop.
func TestBatcherConcurrentSessions(t *testing.T) {
	m := tinyModel(t, kernels.BF16, 0)
	batch, alone := batchSessions(t, m), batchSessions(t, m)
	const steps = 8
	want := make([][][]float32, len(alone)) // session × step
	firsts := make([]int, len(alone))
	for i, s := range alone {
		tok := 20 + i
		firsts[i] = tok
		for range steps {
			l, err := s.Forward(context.Background(), []int{tok}, false)
			require.NoError(t, err)
			want[i] = append(want[i], append([]float32(nil), l...))
			tok = sample.Argmax(l)
		}
	}
	// As if the sessions had just decoded together, with a window long
	// enough that each batch waits for all of them (max 8): every step is
	// one batch of all five, whatever the goroutines' timing.
	b := NewBatcher(m, 8, time.Minute)
	b.last = len(batch)
	errs := make(chan error, len(batch))
	for i, s := range batch {
		go func() {
			tok := firsts[i]
			for step := range steps {
				l, err := b.Forward(context.Background(), s, tok)
				if err != nil {
					errs <- fmt.Errorf("session %d step %d: %w", i, step, err)
					return
				}
				if e := nmse(l, want[i][step]); e > 1e-6 {
					errs <- fmt.Errorf("session %d step %d: NMSE %g", i, step, e)
					return
				}
				tok = sample.Argmax(want[i][step])
			}
			errs <- nil
		}()
	}
	for range batch {
		require.NoError(t, <-errs)
	}
	batches, n := b.Stats()
	require.EqualValues(t, len(batch)*steps, n)
	require.EqualValues(t, steps, batches, "the sessions were not batched together")
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.running
	}, 5*time.Second, time.Millisecond, "the batching goroutine did not end")
}

// The call that completes a batch starts it at once, long before the
// window ends: a batch that waited for its window (an hour here) would
// meet the calls' deadline instead.
func TestBatcherFullBatchStartsAtOnce(t *testing.T) {
	m := tinyModel(t, kernels.F32, 0)
	b := NewBatcher(m, 4, time.Hour)
	for round := range 3 {
		b.mu.Lock()
		b.last = 3 // as if three sessions had just decoded together
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				s := m.NewSession()
				defer s.Close()
				_, err := b.Forward(ctx, s, 1+i)
				errs <- err
			}()
		}
		for range 3 {
			require.NoError(t, <-errs, "round %d", round)
		}
		cancel()
	}
	batches, steps := b.Stats()
	require.EqualValues(t, 9, steps)
	require.EqualValues(t, 3, batches, "each round's three calls were not one batch")
}

// A call waiting for its batch leaves when its context is cancelled, the
// session unchanged, and a bad token is the caller's own error.
func TestBatcherCancelAndBadInput(t *testing.T) {
	m := tinyModel(t, kernels.F32, 0)
	s := m.NewSession()
	b := NewBatcher(m, 4, time.Hour)
	b.last = 3 // as if three sessions had decoded together: a call waits for two more
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := b.Forward(ctx, s, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 0, s.Len())
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.running
	}, 5*time.Second, time.Millisecond, "the batching goroutine did not end")

	_, err = b.Forward(context.Background(), s, m.Config().VocabSize)
	require.ErrorIs(t, err, ErrToken)
	_, err = b.Forward(context.Background(), tinyModel(t, kernels.F32, 0).NewSession(), 1)
	require.Error(t, err)
	require.Equal(t, 0, s.Len())
}
