package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DecodeBatch feeds tokens[i] to sessions[i], for every i, in one forward
// pass: the weight matrices are read once for all the sessions (a matrix
// product over a row per session instead of one matrix-vector product per
// session), while each session's attention reads its own KV cache at its
// own position, so sessions of different lengths and forks of one session
// batch together. Decoding is bound by reading the weights, so a step for
// eight sessions costs little more than a step for one.
//
// The result holds each session's logits after its token, which are also
// its Last: the same as sessions[i].Forward(ctx, tokens[i:i+1], false) to
// float32 rounding (not bit for bit: the batched product sums in another
// order). The sessions must be distinct sessions of one model, none used
// elsewhere during the call. On a device without batches (a GPU today,
// see BatchResident) the sessions are stepped in turn.
//
// Invalid input (mismatched lengths, a token outside the vocabulary, a
// session at the end of its context, sessions of different models or one
// session twice) is an error that changes no session. A failure during the
// pass (a cancelled ctx, a device error) rolls every session back to its
// length before the call, forgetting its Last.
func DecodeBatch(ctx context.Context, sessions []*Session, tokens []int) ([][]float32, error) {
	if len(sessions) == 0 || len(sessions) != len(tokens) {
		return nil, fmt.Errorf("model: decode batch of %d sessions and %d tokens", len(sessions), len(tokens))
	}
	m := sessions[0].m
	seen := make(map[*Session]bool, len(sessions))
	for i, s := range sessions {
		switch {
		case s == nil:
			return nil, fmt.Errorf("model: decode batch: session %d is nil", i)
		case s.m != m:
			return nil, fmt.Errorf("model: decode batch: session %d is of another model than session 0", i)
		case seen[s]:
			return nil, fmt.Errorf("model: decode batch: session %d appears twice", i)
		}
		seen[s] = true
		if err := s.check(tokens[i : i+1]); err != nil {
			return nil, fmt.Errorf("model: decode batch: session %d: %w", i, err)
		}
	}
	out := make([][]float32, len(sessions))
	br, ok := m.res.(BatchResident)
	if !ok || len(sessions) == 1 {
		for i, s := range sessions {
			l, err := s.Forward(ctx, tokens[i:i+1], false)
			if err != nil {
				for _, done := range sessions[:i] {
					done.Truncate(done.Len() - 1) // never fails: one token was added
				}
				return nil, fmt.Errorf("model: decode batch: session %d: %w", i, err)
			}
			out[i] = l
		}
		return out, nil
	}

	V := m.cfg.VocabSize
	seqs, starts := make([]Seq, len(sessions)), make([]int, len(sessions))
	for i, s := range sessions {
		seqs[i], starts[i] = s.seq, s.seq.Len()
	}
	rollback := func(err error) ([][]float32, error) {
		for i, s := range sessions {
			s.seq.Truncate(starts[i]) // never fails: back to the length before the call
			s.last = nil
		}
		return nil, fmt.Errorf("model: decode batch: %w", err)
	}
	for i, q := range seqs {
		q.Reserve(1)
		if err := q.Err(); err != nil {
			return rollback(fmt.Errorf("session %d: %w", i, err))
		}
	}
	buf := pooledFloats(&m.batchLogits, len(sessions)*V)
	defer m.batchLogits.Put(buf)
	logits := (*buf)[:len(sessions)*V]
	b := br.NewBatch(seqs)
	err := forward(ctx, &m.cfg, b, tokens, 0, logits, len(sessions))
	if r, ok := b.(interface{ release() }); ok {
		r.release() // its activations, for the next batch
	}
	if err != nil {
		return rollback(err)
	}
	for i, s := range sessions {
		s.tokens = append(s.tokens[:starts[i]], tokens[i])
		s.last = s.buffer(1)
		copy(s.last, logits[i*V:(i+1)*V])
		out[i] = s.last
	}
	return out, nil
}

// Batcher batches the decode steps of sessions of one model that run on
// separate goroutines (a server's sessions, an agent's parallel
// explorations) without their coordinating: each calls Batcher.Forward
// instead of Session.Forward for a single token, and calls that arrive
// together become one DecodeBatch. Safe for concurrent use.
//
// Calls queue while a batch runs, so load forms batches by itself. To
// catch the sessions that come back a moment apart (each samples its
// token first), a batch is started once as many calls are waiting as
// there were distinct sessions in the last two batches (two, so that
// sessions split over alternating batches join up), or when window has
// passed since collecting began, whichever is first; a lone session never
// waits. The batches run on a goroutine that exists only while
// calls are waiting or running: there is nothing to close.
type Batcher struct {
	m      *Model
	max    int
	window time.Duration
	wake   chan struct{} // a call was queued (buffered: a token, not a count)

	mu      sync.Mutex
	queue   []*decodeCall
	running bool       // the batching goroutine is alive
	last    int        // distinct sessions in the last two batches: how many to wait for
	prev    []*Session // the sessions of the last batch
	batches int64
	steps   int64
}

// decodeCall is one Batcher.Forward waiting for its batch.
type decodeCall struct {
	s      *Session
	token  int
	done   chan struct{} // closed when logits or err is set
	logits []float32
	err    error
}

// NewBatcher returns a batcher of m's sessions, batching at most maxBatch
// sessions per step (≤ 0: 8) and waiting at most window for the sessions
// of the last batches to come back (≤ 0: no waiting; a millisecond is ample
// where each session only samples between steps).
func NewBatcher(m *Model, maxBatch int, window time.Duration) *Batcher {
	if maxBatch <= 0 {
		maxBatch = 8
	}
	return &Batcher{m: m, max: maxBatch, window: max(window, 0), wake: make(chan struct{}, 1)}
}

// Forward is s.Forward(ctx, []int{token}, false), run in a batch with the
// other sessions calling Forward at about the same time (see DecodeBatch
// for the results). Invalid input is s's own error and fails no other
// session; a cancelled ctx ends a call still waiting for its batch, while a
// batch that has started runs to the end (one decode step).
func (b *Batcher) Forward(ctx context.Context, s *Session, token int) ([]float32, error) {
	if s == nil || s.m != b.m {
		return nil, errors.New("model: batcher: no session, or a session of another model")
	}
	if err := s.check([]int{token}); err != nil {
		return nil, err
	}
	c := &decodeCall{s: s, token: token, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	if !b.running {
		b.running = true
		go b.run()
	}
	b.mu.Unlock()
	b.signal()
	select {
	case <-c.done:
	case <-ctx.Done():
		b.mu.Lock()
		if i := slices.Index(b.queue, c); i >= 0 {
			b.queue = slices.Delete(b.queue, i, i+1)
			b.mu.Unlock()
			b.signal() // the goroutine may be waiting for nothing now
			return nil, fmt.Errorf("model: batcher: %w", ctx.Err())
		}
		b.mu.Unlock()
		<-c.done // in a batch already: one step
	}
	return c.logits, c.err
}

// signal wakes the batching goroutine if it is waiting for calls.
func (b *Batcher) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Stats returns the batches run so far and the session steps they held
// (steps/batches is the mean batch size).
func (b *Batcher) Stats() (batches, steps int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches, b.steps
}

// run decodes batches until no call is waiting.
func (b *Batcher) run() {
	for {
		batch := b.collect()
		if batch == nil {
			return
		}
		sessions, tokens := make([]*Session, len(batch)), make([]int, len(batch))
		for i, c := range batch {
			sessions[i], tokens[i] = c.s, c.token
		}
		// No caller's ctx governs a step shared by others; a step is short.
		logits, err := DecodeBatch(context.Background(), sessions, tokens)
		for i, c := range batch {
			if err == nil {
				c.logits = logits[i]
			}
			c.err = err
			close(c.done)
		}
	}
}

// collect waits for the next batch (see Batcher) and takes it from the
// queue: up to max calls of distinct sessions. With nothing queued it
// marks the goroutine gone and returns nil.
func (b *Batcher) collect() []*decodeCall {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	expired := b.window == 0
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if len(b.queue) == 0 {
			b.running = false
			return nil
		}
		if expired || len(b.queue) >= min(b.max, max(1, b.last)) {
			break
		}
		if timer == nil {
			timer = time.NewTimer(b.window)
		}
		b.mu.Unlock()
		select {
		case <-b.wake:
		case <-timer.C:
			expired = true
		}
		b.mu.Lock()
	}
	var batch []*decodeCall
	rest := b.queue[:0]
	for _, c := range b.queue {
		if len(batch) < b.max && !slices.ContainsFunc(batch, func(d *decodeCall) bool { return d.s == c.s }) {
			batch = append(batch, c)
		} else {
			rest = append(rest, c) // a session twice is misuse; it waits its turn
		}
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	cur := make([]*Session, len(batch))
	for i, c := range batch {
		cur[i] = c.s
	}
	b.last = len(cur)
	for _, s := range b.prev {
		if !slices.Contains(cur, s) {
			b.last++
		}
	}
	b.prev = cur
	b.batches++
	b.steps += int64(len(batch))
	return batch
}
