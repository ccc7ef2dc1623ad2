package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/kernels"
	"github.com/ndbg/ndbg/model"
)

// benchModels are the shapes the Go benchmarks cover; the 1.8b shape (3.5
// to 7 GB of weights) only with NDBG_BENCH_LARGE=1, `ndbg bench` always.
func benchModels() []string {
	ms := []string{"34m", "134m"}
	if os.Getenv("NDBG_BENCH_LARGE") != "" {
		ms = append(ms, "1.8b")
	}
	return ms
}

func benchModel(b *testing.B, name string, dt kernels.DType, threads, ctxLen int) *model.Model {
	cfg, err := model.Preset(name)
	require.NoError(b, err)
	m, err := model.NewRandom(context.Background(), cfg, dt, 1, model.Options{Threads: threads, Context: ctxLen})
	require.NoError(b, err)
	b.Cleanup(func() { m.Close() })
	return m
}

// BenchmarkDecode reports decode tokens/s and the GB/s of weights read.
func BenchmarkDecode(b *testing.B) {
	for _, name := range benchModels() {
		for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%v/t%d", name, dt, threads), func(b *testing.B) {
					m := benchModel(b, name, dt, threads, 4096)
					s := m.NewSession()
					_, err := s.Forward(context.Background(), []int{1, 2, 3, 4}, false)
					require.NoError(b, err)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if s.Len() == m.Config().MaxPositionEmbeddings {
							require.NoError(b, s.Truncate(4))
						}
						_, err := s.Forward(context.Background(), []int{i % m.Config().VocabSize}, false)
						require.NoError(b, err)
					}
					sec := b.Elapsed().Seconds()
					b.ReportMetric(float64(b.N)/sec, "tok/s")
					b.ReportMetric(float64(m.WeightBytes())*float64(b.N)/sec/1e9, "GB/s")
				})
			}
		}
	}
}

// BenchmarkPrefill reports prompt tokens/s for 128-token prompts.
func BenchmarkPrefill(b *testing.B) {
	const n = 128
	for _, name := range benchModels() {
		for _, dt := range []kernels.DType{kernels.F32, kernels.BF16} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%v/t%d", name, dt, threads), func(b *testing.B) {
					m := benchModel(b, name, dt, threads, n)
					prompt := make([]int, n)
					for i := range prompt {
						prompt[i] = i * 31 % m.Config().VocabSize
					}
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						_, err := m.NewSession().Forward(context.Background(), prompt, false)
						require.NoError(b, err)
					}
					b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// TestRunTable runs the measurement end to end on the tiny preset.
func TestRunTable(t *testing.T) {
	o := Options{Models: []string{"tiny"}, DTypes: []string{"bf16"}, Threads: []int{1, 2},
		Prefill: 16, Decode: 4, Reps: 1, Fast: true}
	machines := []Machine{{Threads: 1, Bandwidth: 10, FMAPeak: 100}, {Threads: 2, Bandwidth: 20, FMAPeak: 200}}
	rs, err := Run(context.Background(), o, machines)
	require.NoError(t, err)
	require.Len(t, rs, 4) // native and fast kernels, 1 and 2 threads
	for _, r := range rs {
		assert.Greater(t, r.DecodeTokS, 0.0)
		assert.Greater(t, r.PrefillTokS, 0.0)
		assert.InDelta(t, float64(r.WeightBytes)*r.DecodeTokS/1e9, r.DecodeGBs, 1e-9)
		assert.Equal(t, float64(r.Threads)*10, r.Machine.Bandwidth)
	}
	var sb strings.Builder
	require.NoError(t, WriteTable(&sb, machines, rs))
	assert.Contains(t, sb.String(), "| tiny |")
}

func TestRunSessionsTable(t *testing.T) {
	o := Options{Models: []string{"tiny"}, DTypes: []string{"f32"}, Threads: []int{1},
		Prefill: 8, Decode: 3, Reps: 1}
	rs, err := RunSessions(context.Background(), o, []int{1, 3})
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for i, r := range rs {
		assert.Equal(t, []int{1, 3}[i], r.Sessions)
		assert.Greater(t, r.BatchedTokS, 0.0)
		assert.Greater(t, r.SeparateTokS, 0.0)
		assert.GreaterOrEqual(t, r.MeanBatch, 1.0)
		assert.LessOrEqual(t, r.MeanBatch, float64(r.Sessions))
	}
	for _, r := range rs {
		require.Len(t, r.RoundsTokCPU, o.Reps)
	}
	var sb strings.Builder
	require.NoError(t, WriteSessionsTable(&sb, rs))
	assert.Contains(t, sb.String(), "| tiny | F32 |")
	if rs[0].RoundsTokCPU[0][0] > 0 { // a platform with CPU time
		assert.Contains(t, sb.String(), " (1) |", "the paired column: a ratio over one round")
	}

	_, err = RunSessions(context.Background(), o, []int{0})
	require.Error(t, err)
	_, err = RunSessions(context.Background(), o, nil)
	require.Error(t, err)
}

// TestPairedRatioCPU: the rounds' ratios against the better of one
// session's two figures of the same round, their median, and no figure
// where the rounds do not pair up or carry no CPU time.
func TestPairedRatioCPU(t *testing.T) {
	one := SessionResult{Sessions: 1, RoundsTokCPU: [][2]float64{{100, 90}, {50, 60}, {80, 80}, {100, 100}}}
	r := SessionResult{Sessions: 8, RoundsTokCPU: [][2]float64{{400, 1}, {180, 1}, {400, 1}, {300, 1}}}
	p, ok := PairedRatioCPU(r, one)
	require.True(t, ok)
	assert.InDelta(t, 3.5, p, 1e-12) // ratios 4, 3, 5, 3: the median of an even count is the mean of the middle two
	r.RoundsTokCPU = r.RoundsTokCPU[:3]
	p, ok = PairedRatioCPU(r, one)
	assert.False(t, ok, "%v", p)
	one.RoundsTokCPU = one.RoundsTokCPU[:3]
	p, ok = PairedRatioCPU(r, one)
	require.True(t, ok)
	assert.InDelta(t, 4.0, p, 1e-12) // 4, 3, 5
	one.RoundsTokCPU[1] = [2]float64{0, 0}
	_, ok = PairedRatioCPU(r, one)
	assert.False(t, ok)
	_, ok = PairedRatioCPU(SessionResult{}, SessionResult{})
	assert.False(t, ok)
}

// BenchmarkDecodeGGUF reports decode tokens/s of the quantized presets'
// GGUF files (q8_0, q4_k_m; written by quantize.Random into
// NDBG_BENCH_GGUF, or the temporary folder) as bench/llamacpp.sh measures
// them: tokens 128 … 159 after a 128-token prompt, over and over.
//
//	NDBG_BENCH_GGUF=~/.cache/ndbg/llamacpp/gguf go test -run '^$' -bench DecodeGGUF -cpuprofile /tmp/cpu.prof ./bench/
func BenchmarkDecodeGGUF(b *testing.B) {
	const prompt, decode = 128, 32
	o := Options{GGUFDir: os.Getenv("NDBG_BENCH_GGUF")}
	for _, name := range benchModels() {
		for _, dt := range []string{"q8_0", "q4_k_m"} {
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/t%d", name, dt, threads), func(b *testing.B) {
					ctx := context.Background()
					cfg, err := model.Preset(name)
					require.NoError(b, err)
					m, err := o.load(ctx, name, cfg, dt, model.Options{Threads: threads, Context: prompt + decode})
					require.NoError(b, err)
					b.Cleanup(func() { m.Close() })
					s := m.NewSession()
					toks := make([]int, prompt)
					for i := range toks {
						toks[i] = (i*7 + 1) % cfg.VocabSize
					}
					_, err = s.Forward(ctx, toks, false)
					require.NoError(b, err)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						if s.Len() == prompt+decode {
							require.NoError(b, s.Truncate(prompt))
						}
						_, err := s.Forward(ctx, []int{i % cfg.VocabSize}, false)
						require.NoError(b, err)
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
				})
			}
		}
	}
}

// BenchmarkDecodeBatchGGUF reports what issue 26's item 7 measures: one
// model.DecodeBatch step of 1 and of 8 sessions with the quantized presets'
// GGUF files (as BenchmarkDecodeGGUF), each session after a prompt of its
// own (distinct caches), and of 8 forks of one prompted session (sharing
// the prompt's cache blocks, as a debugger's steps from one program do and
// as `ndbg bench --sessions` measures), on one thread: tokens per second
// and per CPU-second. 8 sessions' tok/cpu-s over 1 session's is the
// batch's gain. NDBG_BENCH_PROMPT sets the prompt's length (128 tokens
// unless set).
//
//	NDBG_BENCH_GGUF=~/.cache/ndbg/llamacpp/gguf go test -run '^$' -bench DecodeBatchGGUF ./bench/
func BenchmarkDecodeBatchGGUF(b *testing.B) {
	const decode, most = 32, 8
	prompt := 128
	if v, err := strconv.Atoi(os.Getenv("NDBG_BENCH_PROMPT")); err == nil && v > 0 {
		prompt = v
	}
	o := Options{GGUFDir: os.Getenv("NDBG_BENCH_GGUF")}
	for _, name := range benchModels() {
		for _, dt := range []string{"q8_0", "q4_k_m"} {
			ctx := context.Background()
			var m *model.Model
			var prompted []*model.Session
			for _, c := range []struct {
				n     int
				forks bool
			}{{1, false}, {most, false}, {most, true}} {
				n, what := c.n, fmt.Sprintf("sessions=%d", c.n)
				if c.forks {
					what = fmt.Sprintf("forks=%d", c.n)
				}
				b.Run(fmt.Sprintf("%s/%s/%s", name, dt, what), func(b *testing.B) {
					cfg, err := model.Preset(name)
					require.NoError(b, err)
					if m == nil {
						m, err = o.load(ctx, name, cfg, dt, model.Options{Threads: 1, Context: prompt + decode})
						require.NoError(b, err)
						for i := range most {
							s := m.NewSession()
							toks := make([]int, prompt)
							for j := range toks {
								toks[j] = (j*7 + i*131 + 1) % cfg.VocabSize
							}
							_, err = s.Forward(ctx, toks, false)
							require.NoError(b, err)
							prompted = append(prompted, s)
						}
					}
					sessions, tokens := make([]*model.Session, n), make([]int, n)
					for i := range sessions {
						from := prompted[i]
						if c.forks {
							from = prompted[0]
						}
						sessions[i], tokens[i] = from.Fork(), i+1
					}
					c0 := cputime.Process()
					for b.Loop() {
						if sessions[0].Len() == prompt+decode {
							for _, s := range sessions {
								require.NoError(b, s.Truncate(prompt))
							}
						}
						_, err := model.DecodeBatch(ctx, sessions, tokens)
						require.NoError(b, err)
					}
					b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
					if d := (cputime.Process() - c0).Seconds(); d > 0 {
						b.ReportMetric(float64(n*b.N)/d, "tok/cpu-s")
					}
				})
			}
			if m != nil {
				m.Close()
			}
		}
	}
}
