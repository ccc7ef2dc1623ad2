package ndbg_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/trace"
)

// loopProgram runs a loop of 500,000 iterations, two line events each:
// about 10^6 events before its return.
const loopProgram = `def f(n):
    s = 0
    for i in range(n):
        s += i
    return s
`

// BenchmarkRealStepBack: on the live real backend, stand at the return of
// a call that ran about 10^6 events, then step back one event (the program
// runs again from its start to event 10^6 - 1) and forward again (goal: a
// step back under a second). Reported: the step back's wall time (p50 and
// the worst), and a continue over the whole loop.
func BenchmarkRealStepBack(b *testing.B) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{}), loopProgram, "f(500000)")
	require.NoError(b, err)
	defer s.Close()
	require.NoError(b, s.SetBreakpoint(5))
	t0 := time.Now()
	st, err := s.Continue(ctx)
	run := time.Since(t0)
	require.NoError(b, err)
	require.Equal(b, 5, st.Line)
	var backs, cpus []time.Duration
	b.ResetTimer()
	for range b.N {
		t, c := time.Now(), cputime.Process()
		st, err := s.StepBackInto(ctx)
		backs = append(backs, time.Since(t))
		cpus = append(cpus, ndbg.RunCPU(s)+cputime.Process()-c)
		require.NoError(b, err)
		require.Equal(b, dsl.Line, st.Event)
		require.Equal(b, 3, st.Line, "the loop's last for line, which ends it")
		require.Equal(b, dsl.Local{Name: "i", Repr: "499999"}, st.Locals[2])
		st, err = s.StepInto(ctx)
		require.NoError(b, err)
		require.Equal(b, 5, st.Line)
		// A user's pause between two commands, in which the interpreter
		// the next step back takes is started ahead and the replaced run
		// is reaped (not timed).
		b.StopTimer()
		time.Sleep(time.Second)
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(backs)
	slices.Sort(cpus)
	b.ReportMetric(float64(cpus[len(cpus)/2].Milliseconds()), "ms-cpu/step-back-p50")
	b.ReportMetric(float64(backs[len(backs)/2].Milliseconds()), "ms/step-back-p50")
	b.ReportMetric(float64(backs[len(backs)-1].Milliseconds()), "ms/step-back-max")
	b.ReportMetric(float64(run.Milliseconds()), "ms/continue-1e6-events")
}

// BenchmarkRealInterrupt: a continue into an endless loop is interrupted
// after a while (at whatever iteration it has reached); reported is the
// time from Session.Interrupt to the stop (goal: under a second).
func BenchmarkRealInterrupt(b *testing.B) {
	ctx := context.Background()
	s, err := ndbg.Start(ctx, ndbg.Real(trace.Limits{Timeout: time.Minute}), "def f():\n    i = 0\n    while True:\n        i += 1\n", "f()")
	require.NoError(b, err)
	defer s.Close()
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		done := make(chan time.Time, 1)
		go func() {
			_, err := s.Continue(ctx)
			require.NoError(b, err)
			done <- time.Now()
		}()
		time.Sleep(200 * time.Millisecond)
		t := time.Now()
		s.Interrupt()
		lat = append(lat, (<-done).Sub(t))
		require.Equal(b, "interrupt", s.Interrupted())
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/interrupt-p50")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ms/interrupt-max")
}
