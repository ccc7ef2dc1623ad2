package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/data/cruxeval"
)

// benchTexts returns about 100 KB of Python code (CRUXEval programs) and
// of CWM-style trace text built from them.
func benchTexts(b *testing.B) (code, dsl string) {
	var corpus []string
	readJSON(b, "testdata/corpus.json", &corpus)
	var c, d strings.Builder
	for _, s := range corpus {
		if strings.HasPrefix(s, "<|begin_of_text|><|trace_context_start|>") {
			d.WriteString(s)
		}
	}
	items, err := cruxeval.Dev()
	require.NoError(b, err)
	for _, it := range items {
		c.WriteString(it.Code)
		c.WriteString("\n\n")
	}
	code, dsl = c.String(), d.String()
	for len(code) < 100_000 {
		code += code
	}
	for len(dsl) < 100_000 {
		dsl += dsl
	}
	return code, dsl
}

func BenchmarkEncode(b *testing.B) {
	code, dsl := benchTexts(b)
	for _, name := range []string{"code-gpt2", "code-llama3", "llama3-cwm"} {
		tk := loadVariant(b, "testdata", name)
		for _, in := range []struct{ kind, text string }{{"python", code}, {"dsl", dsl}} {
			b.Run(name+"/"+in.kind, func(b *testing.B) {
				require.NotEmpty(b, tk.Encode(in.text))
				b.SetBytes(int64(len(in.text)))
				b.ResetTimer()
				cpu := startCPU()
				for i := 0; i < b.N; i++ {
					tk.Encode(in.text)
				}
				cpu.report(b, len(in.text))
			})
		}
	}
}

// BenchmarkEncodeCold measures encoding without the pre-token cache.
func BenchmarkEncodeCold(b *testing.B) {
	code, _ := benchTexts(b)
	tk := loadVariant(b, "testdata", "llama3-cwm")
	b.SetBytes(int64(len(code)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.cache = newWordCache()
		tk.Encode(code)
	}
}

func BenchmarkDecode(b *testing.B) {
	code, _ := benchTexts(b)
	tk := loadVariant(b, "testdata", "llama3-cwm")
	ids := tk.Encode(code)
	b.SetBytes(int64(len(code)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.Decode(ids)
	}
}

func BenchmarkLoadLlama3(b *testing.B) {
	p := llama3Path(b)
	for i := 0; i < b.N; i++ {
		_, err := Load(p)
		require.NoError(b, err)
	}
}

// cpuClock measures the CPU time of the benchmark's thread, which the
// shared, loaded machines distort much less than wall time.
type cpuClock struct{ start time.Duration }

func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock {
	runtime.LockOSThread()
	return cpuClock{threadCPU()}
}

// report adds the metric cpu-MB/s: bytes encoded per second of CPU time.
func (c cpuClock) report(b *testing.B, n int) {
	d := threadCPU() - c.start
	runtime.UnlockOSThread()
	if d > 0 {
		b.ReportMetric(float64(n)*float64(b.N)/d.Seconds()/1e6, "cpu-MB/s")
	}
}

// BenchmarkEncodeStdlib encodes the Python standard library's top-level
// modules (about 5 MB of varied code) with a fresh cache each time: the
// throughput a data pipeline sees on unseen code.
func BenchmarkEncodeStdlib(b *testing.B) {
	files, _ := filepath.Glob("/usr/lib/python3.11/*.py")
	if len(files) == 0 {
		b.Skip("no /usr/lib/python3.11")
	}
	var sb strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(b, err)
		sb.Write(data)
	}
	text := sb.String()
	for _, name := range []string{"code-llama3", "llama3-cwm"} {
		tk := loadVariant(b, "testdata", name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			cpu := startCPU()
			for i := 0; i < b.N; i++ {
				tk.cache = newWordCache()
				tk.Encode(text)
			}
			cpu.report(b, len(text))
		})
	}
}
