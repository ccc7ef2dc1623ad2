package constrain

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/testsupport/oracle"
	"github.com/ndbg/ndbg/statetree"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/trace"
)

// llama3 loads the real 128256-token Llama-3 tokenizer (CWM's vocabulary)
// fetched by tokenizer/oracle/fetch-llama3.sh, or skips.
func llama3(tb testing.TB) *tokenizer.Tokenizer {
	path := filepath.Join("..", ".cache", "tokenizer", "llama3-tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		oracle.Missing(tb, "no Llama-3 tokenizer: run tokenizer/oracle/fetch-llama3.sh")
	}
	tok, err := tokenizer.Load(path)
	require.NoError(tb, err)
	return tok
}

// encodeDSL tokenizes DSL text: special tokens by the vocabulary's ids, the
// text between them with the tokenizer.
func encodeDSL(tok *tokenizer.Tokenizer, v *Vocab, text string) []int {
	var ids []int
	for len(text) > 0 {
		next, nextLen, nextID := len(text), 0, -1
		for name, id := range v.special {
			if i := strings.Index(text, name); i >= 0 && i < next {
				next, nextLen, nextID = i, len(name), id
			}
		}
		ids = append(ids, tok.Encode(text[:next])...)
		if nextID >= 0 {
			ids = append(ids, nextID)
		}
		text = text[next+nextLen:]
	}
	return ids
}

// workload is real frames of real programs: for each program, the frames
// that step_into, step_over and step_return reach from its first states.
type workload struct {
	progs  []*dsl.Program
	codes  [][]Code
	frames [][]frameCase
}

type frameCase struct {
	ctx  Context
	text string
}

func buildWorkload(tb testing.TB, maxStates int) workload {
	ctx := context.Background()
	var w workload
	batch := trace.NewBatch(trace.Limits{})
	defer batch.Close()
	var sources []string
	for _, p := range realPrograms {
		prog, err := dsl.NewProgram(p.src, "f")
		require.NoError(tb, err)
		res, err := batch.Run(ctx, prog, p.call)
		require.NoError(tb, err)
		tr, err := statetree.Build(prog, res.Events)
		require.NoError(tb, err)
		var cases []frameCase
		for i := 0; i < min(tr.End(), maxStates); i++ {
			start := tr.State(i)
			start.Source = prog.Text(start.Line)
			for _, k := range []dsl.ActionKind{dsl.StepInto, dsl.StepOver, dsl.StepReturn} {
				a := dsl.Action{Kind: k}
				next, err := tr.Apply(i, a)
				if err != nil || next >= tr.End() {
					continue
				}
				s := tr.State(next)
				s.Source = prog.Text(s.Line)
				traj := &dsl.Trajectory{Program: prog, Start: start}
				prompt, err := traj.EncodePrompt(a)
				require.NoError(tb, err)
				traj.Steps = []dsl.Step{{Action: a, State: &s}}
				full, err := traj.Encode()
				require.NoError(tb, err)
				frame := strings.TrimSuffix(strings.TrimPrefix(full, prompt), dsl.EndOfText)
				cases = append(cases, frameCase{Context{Action: a, From: start, Stack: stackAt(tr, i),
					Dots: dotsOf(&dsl.Trajectory{Program: prog, Start: start})}, frame})
			}
		}
		w.progs = append(w.progs, prog)
		w.frames = append(w.frames, cases)
		sources = append(sources, prog.Source)
	}
	codes, err := AnalyzeMany(ctx, trace.Limits{}, sources)
	require.NoError(tb, err)
	w.codes = codes
	return w
}

// TestLlama3FramesAccepted feeds real frames, tokenized by the real 128k
// BPE, through the matcher: multi-byte tokens that cross grammar positions
// are accepted, and at every position the mask agrees with Allowed on the
// token taken.
func TestLlama3FramesAccepted(t *testing.T) {
	tok := llama3(t)
	v, err := VocabOf(tok)
	require.NoError(t, err)
	require.Equal(t, 128256, v.Size())
	w := buildWorkload(t, 40)
	mask := make([]uint64, (v.Size()+63)/64)
	for n, prog := range w.progs {
		p, err := Compile(v, prog, w.codes[n])
		require.NoError(t, err)
		for _, c := range w.frames[n] {
			m, err := p.Start(c.ctx)
			require.NoError(t, err)
			for _, id := range encodeDSL(tok, v, c.text) {
				m.FillMask(mask)
				require.True(t, mask[id>>6]>>(id&63)&1 == 1, "token %d (%q) of %q not in the mask", id, tok.TokenBytes(id), c.text)
				require.True(t, m.Accept(id))
			}
			require.True(t, m.Done())
		}
	}
}

// BenchmarkMaskLlama3 measures the per-token cost of the full mask at
// CWM's 128256-token vocabulary over real frames, with each program compiled
// afresh (cold caches), and reports p50/p99 per token, compile time per
// program, and the sample-first check (Allowed) per token.
func BenchmarkMaskLlama3(b *testing.B) { benchmarkMask(b, llama3(b)) }

// BenchmarkMaskDefault is BenchmarkMaskLlama3 with the default model's
// vocabulary (weights/default/tokenizer.json).
func BenchmarkMaskDefault(b *testing.B) {
	tok, err := tokenizer.Load(filepath.Join("..", "weights", "default", "tokenizer.json"))
	if err != nil {
		b.Skipf("no default model: %v", err)
	}
	benchmarkMask(b, tok)
}

func benchmarkMask(b *testing.B, tok *tokenizer.Tokenizer) {
	t0 := time.Now()
	v, err := VocabOf(tok)
	require.NoError(b, err)
	vocabTime := time.Since(t0)
	w := buildWorkload(b, 40)
	mask := make([]uint64, (v.Size()+63)/64)
	var perToken, compile []time.Duration
	var allowed time.Duration
	var tokens int
	type fed struct {
		c   frameCase
		ids []int
	}
	var feeds [][]fed
	for n := range w.progs {
		var fs []fed
		for _, c := range w.frames[n] {
			fs = append(fs, fed{c, encodeDSL(tok, v, c.text)})
		}
		feeds = append(feeds, fs)
	}
	b.ResetTimer()
	for range b.N {
		for n, prog := range w.progs {
			t0 := time.Now()
			p, err := Compile(v, prog, w.codes[n])
			compile = append(compile, time.Since(t0))
			require.NoError(b, err)
			for _, f := range feeds[n] {
				m, err := p.Start(f.c.ctx)
				require.NoError(b, err)
				for _, id := range f.ids {
					t0 := time.Now()
					m.FillMask(mask)
					perToken = append(perToken, time.Since(t0))
					t1 := time.Now()
					ok := m.Allowed(id)
					allowed += time.Since(t1)
					if !ok || !m.Accept(id) {
						b.Fatalf("token %d rejected", id)
					}
					tokens++
				}
			}
		}
	}
	b.StopTimer()
	pct := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(perToken, 0.5), "mask-p50-µs")
	b.ReportMetric(pct(perToken, 0.99), "mask-p99-µs")
	b.ReportMetric(pct(perToken, 1), "mask-max-µs")
	b.ReportMetric(float64(allowed.Nanoseconds())/float64(tokens)/1e3, "allowed-µs/token")
	b.ReportMetric(pct(compile, 0.5), "compile-p50-µs")
	b.ReportMetric(float64(vocabTime.Milliseconds()), "vocab-build-ms")
	b.ReportMetric(float64(tokens)/float64(b.N), "tokens/op")
}
