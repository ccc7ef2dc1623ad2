package ndbg

import (
	"context"

	"github.com/ndbg/ndbg/trace"
)

// parkMin is the fewest events before the current position for which a
// run is parked ahead (below it a step back's replay is quick anyway).
const parkMin = 20_000

// parked is a run of the program started ahead, in the background, to the
// event just before the session's position (a checkpoint: the sandbox
// refuses fork, so a run cannot be copied): a step back to that event or
// later (a step back into, a step back over a line, ...) resumes it
// instead of running the program again from its start. Its stop carries
// the digest of its path, and the replay checks the path to its target as
// a fresh run's.
type parked struct {
	at     int
	done   chan struct{}
	cancel context.CancelFunc
	live   *trace.Live
	stop   *trace.Stop
	err    error
}

// repark parks a run at the event before the current position (the last
// event, at the end), unless one is parked at most an eighth of the run
// before it already (a step back and a step forward again keep the one
// parked before the step back); a run parked elsewhere is dropped. Nothing
// is parked for a short run, or while the session has edits (a replay
// runs them on the way).
func (e *realEngine) repark() {
	at := e.pos - 1
	if e.live == nil || at < parkMin || len(e.edits) > 0 {
		e.unpark()
		return
	}
	if e.park != nil && e.park.at <= at && at-e.park.at <= at/8 {
		return
	}
	e.unpark()
	ctx, cancel := context.WithCancel(context.Background())
	p := &parked{at: at, done: make(chan struct{}), cancel: cancel}
	e.park = p
	li := e.spares.take()
	e.spares.refill(e.lim)
	in := e.input.replayReader()
	go func() {
		defer close(p.done)
		c := trace.NoCriteria()
		c.Index, c.Digest = at, true
		if li != nil {
			p.live, p.stop, p.err = li.Start(ctx, e.prog, e.call, c, in)
		} else {
			p.live, p.stop, p.err = trace.StartLive(ctx, e.prog, e.call, e.lim, c, in)
		}
	}()
}

// unpark drops the parked run: it is stopped and reaped in the background
// (Close waits for it).
func (e *realEngine) unpark() {
	p := e.park
	if p == nil {
		return
	}
	e.park = nil
	p.cancel()
	e.closing.Add(1)
	go func() {
		defer e.closing.Done()
		<-p.done
		if p.live != nil {
			p.live.Close()
		}
	}()
}

// takeParked returns the parked run, waiting for it to reach its event,
// when it is at or before event at (the run is then the caller's); nil
// when there is none, it is past at, or it failed.
func (e *realEngine) takeParked(ctx context.Context, at int) (*trace.Live, *trace.Stop) {
	p := e.park
	if p == nil || at < 0 || p.at > at {
		return nil, nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, nil
	}
	if p.err != nil || p.stop == nil || p.stop.End || p.stop.Index != p.at {
		return nil, nil
	}
	e.park = nil
	p.cancel()
	return p.live, p.stop
}
