package trace

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dsl"
	"github.com/stretchr/testify/require"
)

type benchJob struct {
	prog *dsl.Program
	call string
}

// benchJobs are CRUXEval's dev items (short functions over strings, lists
// and dicts, like the generated programs).
func benchJobs(b *testing.B) []benchJob {
	items, err := cruxeval.Dev()
	require.NoError(b, err)
	var jobs []benchJob
	for _, it := range items {
		p, err := dsl.NewProgram(it.Code, "f")
		require.NoError(b, err)
		jobs = append(jobs, benchJob{p, it.Call()})
	}
	return jobs
}

// cpuSeconds is the CPU time of this process and its reaped children.
func cpuSeconds() float64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	sec := 0.0
	for _, tv := range []syscall.Timeval{self.Utime, self.Stime, kids.Utime, kids.Stime} {
		sec += float64(tv.Sec) + float64(tv.Usec)/1e6
	}
	return sec
}

// meter reports wall-clock rates and, because the machine is shared, rates
// per CPU second (call stop after the interpreters are reaped). Unsandboxed
// these count Go and Python together; in the sandbox the interpreter is
// reaped inside bubblewrap's PID namespace, after the outer bwrap has
// exited, so its CPU time never reaches this process and the per-CPU rates
// count Go and bubblewrap only: compare wall-clock rates across the two.
type meter struct {
	start time.Time
	cpu   float64
}

func startMeter() meter { return meter{time.Now(), cpuSeconds()} }

func (m meter) stop(b *testing.B, events int) {
	sec := time.Since(m.start).Seconds()
	cpu := cpuSeconds() - m.cpu
	b.ReportMetric(float64(b.N)/sec, "programs/s")
	b.ReportMetric(float64(events)/sec, "events/s")
	b.ReportMetric(float64(b.N)/cpu, "programs/cpu-s")
	b.ReportMetric(float64(events)/cpu, "events/cpu-s")
}

// BenchmarkRun: one fresh sandboxed interpreter per program.
func BenchmarkRun(b *testing.B) {
	lim := testLimits(b)
	jobs := benchJobs(b)
	ctx := context.Background()
	events := 0
	m := startMeter()
	for i := 0; b.Loop(); i++ {
		j := jobs[i%len(jobs)]
		res, err := Run(ctx, j.prog, j.call, lim)
		require.NoError(b, err)
		events += len(res.Events)
	}
	m.stop(b, events)
}

// BenchmarkBatch: one interpreter tracing programs in sequence, one
// request at a time (Batch.Run).
func BenchmarkBatch(b *testing.B) {
	lim := testLimits(b)
	jobs := benchJobs(b)
	ctx := context.Background()
	bt := NewBatch(lim)
	events := 0
	m := startMeter()
	for i := 0; b.Loop(); i++ {
		j := jobs[i%len(jobs)]
		res, err := bt.Run(ctx, j.prog, j.call)
		require.NoError(b, err)
		events += len(res.Events)
	}
	require.NoError(b, bt.Close())
	m.stop(b, events)
}

// BenchmarkBatchStream: one interpreter, requests queued ahead (RunAll).
func BenchmarkBatchStream(b *testing.B) {
	lim := testLimits(b)
	jobs := benchJobs(b)
	ctx := context.Background()
	bt := NewBatch(lim)
	all := make([]Job, b.N)
	for i := range all {
		all[i] = Job{jobs[i%len(jobs)].prog, jobs[i%len(jobs)].call}
	}
	events := 0
	b.ResetTimer()
	m := startMeter()
	err := bt.RunAll(ctx, all, func(_ int, res *Result, err error) error {
		if err != nil {
			return err
		}
		events += len(res.Events)
		return nil
	})
	require.NoError(b, err)
	require.NoError(b, bt.Close())
	m.stop(b, events)
}

// BenchmarkBatchEvents: an event-dense program (a loop over strings, a
// tuple and an int) through Batch, Go decoding included; reports events/s.
func BenchmarkBatchEvents(b *testing.B) {
	lim := testLimits(b)
	prog, err := dsl.NewProgram("def f(n):\n    words = ('alpha', 'beta', 'gamma', 'delta')\n    text = ' '.join(words) * 20\n    out = ''\n    for i in range(n):\n        w = words[i % 4]\n        out = w.upper() + out[:20]\n    return out\n", "f")
	require.NoError(b, err)
	lim.Timeout = time.Minute // the machine may be shared
	bt := NewBatch(lim)
	ctx := context.Background()
	events := 0
	m := startMeter()
	for b.Loop() {
		res, err := bt.Run(ctx, prog, "f(3000)")
		require.NoError(b, err)
		events += len(res.Events)
	}
	require.NoError(b, bt.Close())
	m.stop(b, events)
}
