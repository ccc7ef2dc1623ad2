package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ndbg/ndbg"
)

// loadClients is how many clients run at once.
const loadClients = 64

// BenchmarkLoadReal is the load test on the real backend: each round (one
// b.N iteration) 64 clients on loopback each create a session, take 8
// steps forward and 8 back, read the state and the history, and delete
// it: 1,280 requests. It reports latency (p50, p99; of the creates, which
// run the program, apart), throughput, errors
// (any answer but the expected one fails the benchmark) and the heap in
// use after a GC before the first round and after each round, which must
// stay flat (the benchmark fails if it grows by half and 4 MB).
//
//	go test -run XXX -bench BenchmarkLoad -benchtime 5x ./service/serve
func BenchmarkLoadReal(b *testing.B) {
	benchLoad(b, Config{Backends: []string{Real}}, "real", 8, loadClients)
}

// BenchmarkLoadNeural is the same with the embedded default model, all 64
// clients' sessions sharing it, 2 steps each way: 448 requests a round.
func BenchmarkLoadNeural(b *testing.B) {
	m, err := ndbg.Open(context.Background(), ndbg.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	benchLoad(b, Config{Model: m}, "neural", 2, loadClients)
}

// BenchmarkLoadNeuralBatching is BenchmarkLoadNeural at 8, 16 and 64
// clients with the model batching the sessions' decode steps (the default)
// and without (ndbg.Options.SerialDecode), each count's two one after the
// other so that a busy machine's load falls on both alike.
//
//	go test -run XXX -bench BenchmarkLoadNeuralBatching -benchtime 2x ./service/serve
func BenchmarkLoadNeuralBatching(b *testing.B) {
	for _, clients := range []int{8, 16, 64} {
		for _, serial := range []bool{false, true} {
			b.Run(fmt.Sprintf("clients=%d/serial=%v", clients, serial), func(b *testing.B) {
				m, err := ndbg.Open(context.Background(), ndbg.Options{SerialDecode: serial})
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				benchLoad(b, Config{Model: m}, "neural", 2, clients)
				batches, steps := m.DecodeStats()
				if batches > 0 {
					b.ReportMetric(float64(steps)/float64(batches), "mean-batch")
				}
			})
		}
	}
}

func benchLoad(b *testing.B, cfg Config, backend string, steps, clients int) {
	cfg.Limits = Limits{MaxSessions: clients, RequestTimeout: 10 * time.Minute}
	cfg.Token = testToken
	svc, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(svc.Handler())
	defer func() { ts.Close(); svc.Close() }()
	transport := &http.Transport{MaxIdleConnsPerHost: clients}
	client := &http.Client{Transport: bearer{testToken, transport}}
	defer transport.CloseIdleConnections()
	create, err := json.Marshal(map[string]string{"program": prog, "call": "f([1, None, 4])", "backend": backend})
	if err != nil {
		b.Fatal(err)
	}
	heap := func() float64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapInuse) / (1 << 20)
	}
	before := heap()
	var lat, creates []time.Duration
	var first, last float64
	var elapsed time.Duration
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		round, made, err := loadRound(client, ts.URL, create, steps, clients)
		elapsed += time.Since(t0)
		if err != nil {
			b.Fatalf("round %d: %v", i, err)
		}
		lat, creates = append(lat, round...), append(creates, made...)
		b.StopTimer()
		last = heap()
		if i == 0 {
			first = last
		}
		b.StartTimer()
	}
	b.StopTimer()
	if last > 1.5*first+4 { // flat: sessions deleted leave nothing behind
		b.Errorf("the heap in use grew from %.1f MB after the first round to %.1f MB after round %d", first, last, b.N)
	}
	ms := func(d []time.Duration, q int) float64 {
		slices.Sort(d)
		return float64(d[len(d)*q/100].Microseconds()) / 1000
	}
	b.ReportMetric(ms(lat, 50), "p50-ms")
	b.ReportMetric(ms(lat, 99), "p99-ms")
	b.ReportMetric(ms(creates, 50), "create-p50-ms")
	b.ReportMetric(ms(creates, 99), "create-p99-ms")
	b.ReportMetric(float64(len(lat)+len(creates))/elapsed.Seconds(), "req/s")
	b.ReportMetric(0, "errors") // any error has failed the benchmark
	b.ReportMetric(before, "heap-before-MB")
	b.ReportMetric(first, "heap-round1-MB")
	b.ReportMetric(last, "heap-last-MB")
}

// loadRound runs the clients once and returns the latency of every
// request but the creates, and of the creates (each runs the program);
// the first unexpected answer is an error.
func loadRound(client *http.Client, url string, create []byte, steps, clients int) (lat, creates []time.Duration, err error) {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			var mine, made []time.Duration
			do := func(method, path string, body []byte, want int) (map[string]any, error) {
				req, err := http.NewRequest(method, url+path, bytes.NewReader(body))
				if err != nil {
					return nil, err
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					return nil, fmt.Errorf("client %d: %s %s: %w", c, method, path, err)
				}
				data, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if method == "POST" && path == "/sessions" {
					made = append(made, time.Since(t0))
				} else {
					mine = append(mine, time.Since(t0))
				}
				if err != nil || resp.StatusCode != want {
					return nil, fmt.Errorf("client %d: %s %s: %d, want %d: %s %v", c, method, path, resp.StatusCode, want, data, err)
				}
				var v map[string]any
				if want != http.StatusNoContent {
					err = json.Unmarshal(data, &v)
				}
				return v, err
			}
			err := func() error {
				v, err := do("POST", "/sessions", create, http.StatusCreated)
				if err != nil {
					return err
				}
				s := "/sessions/" + v["id"].(string)
				for i := range 2 * steps {
					a := []byte(`{"action": "step_into"}`)
					if i >= steps {
						a = []byte(`{"action": "inv_step_into"}`)
					}
					if _, err := do("POST", s+"/actions", a, http.StatusOK); err != nil {
						return err
					}
				}
				for _, p := range []string{s, s + "/history"} {
					if _, err := do("GET", p, nil, http.StatusOK); err != nil {
						return err
					}
				}
				_, err = do("DELETE", s, nil, http.StatusNoContent)
				return err
			}()
			mu.Lock()
			lat, creates = append(lat, mine...), append(creates, made...)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("%d of %d clients failed, the first: %w", len(errs), clients, errs[0])
	}
	return lat, creates, nil
}
