package model

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
	"github.com/ndbg/ndbg/sample"
	"github.com/ndbg/ndbg/weights"
)

// reference is one fixture written by testdata/make_reference.py.
type reference struct {
	tokens []int
	prompt int
	logits []float32 // len(tokens) × vocab
}

func readReference(t *testing.T, dir string) reference {
	t.Helper()
	f, err := weights.OpenFile(filepath.Join(dir, "reference.safetensors"))
	require.NoError(t, err)
	defer f.Close()
	get := func(name string) []float32 {
		tn, err := f.Tensor(name)
		require.NoError(t, err)
		v, err := tn.F32()
		require.NoError(t, err)
		return append([]float32(nil), v...)
	}
	var r reference
	for _, v := range get("tokens") {
		r.tokens = append(r.tokens, int(v))
	}
	r.prompt = int(get("prompt")[0])
	r.logits = get("logits")
	return r
}

// nmse is the normalised mean squared error of got against want:
// Σ(got−want)² / Σwant² (llama.cpp test-backend-ops' measure).
func nmse(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		return num
	}
	return num / den
}

// margin is the gap between the largest and second largest value.
func margin(x []float32) float32 {
	a, b := float32(math.Inf(-1)), float32(math.Inf(-1))
	for _, v := range x {
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a - b
}

// checkReferenceDir loads every fixture under root and compares the engine's
// logits with PyTorch's at every prefill and decode position.
func checkReferenceDir(t *testing.T, root string) {
	dirs, err := filepath.Glob(filepath.Join(root, "*", "reference.safetensors"))
	require.NoError(t, err)
	require.Len(t, dirs, 6, "fixtures under %s", root)
	for _, p := range dirs {
		dir := filepath.Dir(p)
		name := filepath.Base(dir)
		t.Run(name, func(t *testing.T) {
			tol := 1e-6
			if strings.HasSuffix(name, "bf16") {
				tol = 1e-3
			}
			for _, threads := range []int{1, 2} {
				checkReference(t, dir, Options{Threads: threads}, tol)
			}
			// BF16 activations in BF16 products stay within the BF16 limit
			// (F32 checkpoints are unaffected and keep theirs).
			checkReference(t, dir, Options{Threads: 2, FastBF16: true}, tol)
		})
	}
}

func checkReference(t *testing.T, dir string, opts Options, tol float64) {
	ref := readReference(t, dir)
	threads := opts.Threads
	m, err := Load(context.Background(), dir, opts)
	require.NoError(t, err)
	defer m.Close()
	V := m.Config().VocabSize
	require.Equal(t, len(ref.tokens)*V, len(ref.logits))
	s := m.NewSession()
	var worst float64
	defer func() {
		t.Logf("%s threads %d %s: worst NMSE %.3g (limit %g)", filepath.Base(dir), threads, m.Device().Name(), worst, tol)
	}()
	check := func(pos int, got []float32) {
		want := ref.logits[pos*V : (pos+1)*V]
		e := nmse(got, want)
		worst = max(worst, e)
		assert.LessOrEqual(t, e, tol, "threads %d position %d: NMSE %.3g", threads, pos, e)
		// Greedy decoding must agree wherever the reference is not a near tie.
		if margin(want) > 1e-2 {
			assert.Equal(t, sample.Argmax(want), sample.Argmax(got), "threads %d position %d: argmax", threads, pos)
		}
	}
	all, err := s.Forward(context.Background(), ref.tokens[:ref.prompt], true)
	require.NoError(t, err)
	for i := 0; i < ref.prompt; i++ {
		check(i, all[i*V:(i+1)*V])
	}
	for i := ref.prompt; i < len(ref.tokens); i++ {
		got, err := s.Forward(context.Background(), ref.tokens[i:i+1], false)
		require.NoError(t, err)
		check(i, got)
	}
	require.Equal(t, len(ref.tokens), s.Len())
}

// TestReferenceFixtures compares against the committed PyTorch fixtures.
func TestReferenceFixtures(t *testing.T) {
	checkReferenceDir(t, "testdata")
}

// TestReferenceRegenerated reruns make_reference.py when Debian's torch is
// importable and compares against the fresh fixtures too, so a change to
// the script is checked as well as its committed output.
func TestReferenceRegenerated(t *testing.T) {
	const py = "/usr/bin/python3"
	if testing.Short() {
		t.Skip("short mode")
	}
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		oracle.Missing(t, "no PyTorch at %s (apt-get install python3-torch): %v", py, err)
	}
	out := t.TempDir()
	cmd := exec.Command(py, "testdata/make_reference.py", out)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	checkReferenceDir(t, out)
}
