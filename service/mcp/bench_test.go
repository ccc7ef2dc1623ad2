package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ndbg/ndbg/service/sessions"
)

// BenchmarkLoadHTTP is the load test of the streamable HTTP transport, as
// service/serve's BenchmarkLoad is of ndbg serve: 8 and 32 clients, each
// over its own MCP session on loopback with the owner's token, each round
// (one b.N iteration) starting a real session on the mean program, 4
// steps into, 4 back (inv_step_into), the history and debug_end: 11 tool
// calls a client. Every answer is checked (no protocol error, no tool
// error, the steps' stops where expected: back at the start after the 4
// steps back); one wrong answer fails the benchmark. It reports latency
// (p50, p99; debug_start, which runs the program, apart), calls per
// second, and the heap in use after a GC before the first round and after
// the last, which must stay flat (the benchmark fails if it grows by half
// and 4 MB).
//
//	go test -run XXX -bench BenchmarkLoadHTTP -benchtime 2x ./service/mcp
func BenchmarkLoadHTTP(b *testing.B) {
	for _, clients := range []int{8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			m := newManager(b, sessions.Config{Backends: []string{sessions.Real}})
			url, _, _ := serveHTTP(b, m, time.Minute)
			css := make([]*sdk.ClientSession, clients)
			for i := range css {
				cs, err := httpClient(b, url, testToken)
				if err != nil {
					b.Fatal(err)
				}
				css[i] = cs
			}
			heap := func() uint64 {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.HeapInuse
			}
			before := heap()
			var mu sync.Mutex
			var starts, others []time.Duration
			var errs []error
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				var wg sync.WaitGroup
				for c, cs := range css {
					wg.Go(func() {
						s, o, err := loadRound(cs, c)
						mu.Lock()
						defer mu.Unlock()
						starts, others = append(starts, s...), append(others, o...)
						if err != nil {
							errs = append(errs, err)
						}
					})
				}
				wg.Wait()
			}
			elapsed := time.Since(t0)
			b.StopTimer()
			if len(errs) > 0 {
				b.Fatalf("%d of %d rounds failed; first: %v", len(errs), clients*b.N, errs[0])
			}
			after := heap()
			if after > before+before/2+4<<20 {
				b.Fatalf("heap in use grew from %d to %d bytes", before, after)
			}
			slices.Sort(starts)
			slices.Sort(others)
			pct := func(d []time.Duration, p float64) float64 {
				return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1e3
			}
			b.ReportMetric(float64(len(starts)+len(others))/elapsed.Seconds(), "calls/s")
			b.ReportMetric(pct(others, 0.5), "p50-ms")
			b.ReportMetric(pct(others, 0.99), "p99-ms")
			b.ReportMetric(pct(starts, 0.5), "start-p50-ms")
			b.ReportMetric(pct(starts, 0.99), "start-p99-ms")
			b.ReportMetric(float64(before)/1e6, "heap-before-MB")
			b.ReportMetric(float64(after)/1e6, "heap-after-MB")
		})
	}
}

// loadRound is one client's round of BenchmarkLoadHTTP: the latencies of
// its debug_start and of its other calls, and the first wrong answer.
func loadRound(cs *sdk.ClientSession, c int) (starts, others []time.Duration, err error) {
	ctx := context.Background()
	call := func(name string, args map[string]any) (SessionView, time.Duration, error) {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		d := time.Since(t0)
		var v SessionView
		switch {
		case err != nil:
			return v, d, fmt.Errorf("client %d: %s: %w", c, name, err)
		case res.IsError:
			var text string
			for _, ct := range res.Content {
				if tc, ok := ct.(*sdk.TextContent); ok {
					text += tc.Text
				}
			}
			return v, d, fmt.Errorf("client %d: %s: tool error: %s", c, name, text)
		}
		if name != "debug_end" && name != "debug_history" {
			data, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(data, &v); err != nil {
				return v, d, fmt.Errorf("client %d: %s: %w", c, name, err)
			}
		}
		return v, d, nil
	}
	first, d, err := call("debug_start", map[string]any{"program": prog, "call": fmt.Sprintf("f([%d, None, 4])", c), "backend": "real"})
	starts = append(starts, d)
	if err != nil {
		return starts, others, err
	}
	id := first.Session
	for _, action := range []string{"step_into", "step_into", "step_into", "step_into", "inv_step_into", "inv_step_into", "inv_step_into", "inv_step_into"} {
		_, d, err := call("debug_step", map[string]any{"session": id, "action": action})
		others = append(others, d)
		if err != nil {
			return starts, others, err
		}
	}
	back, d, err := call("debug_step", map[string]any{"session": id, "action": "step_into"})
	others = append(others, d)
	if err != nil {
		return starts, others, err
	}
	again, _, err := call("debug_step", map[string]any{"session": id, "action": "inv_step_into"})
	if err != nil {
		return starts, others, err
	}
	if !jsonEqual(again.State.Stop, first.State.Stop) || jsonEqual(back.State.Stop, first.State.Stop) {
		return starts, others, fmt.Errorf("client %d: a step and a step back did not come back to the start: %+v, %+v, %+v", c, first.State.Stop, back.State.Stop, again.State.Stop)
	}
	for _, name := range []string{"debug_history", "debug_end"} {
		_, d, err := call(name, map[string]any{"session": id})
		others = append(others, d)
		if err != nil {
			return starts, others, err
		}
	}
	return starts, others, nil
}
