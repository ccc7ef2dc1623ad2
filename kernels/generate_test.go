package kernels

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// generated maps each generated assembly file to the generator that writes
// it (the go:generate lines of generate.go run the same pairs).
var generated = map[string]string{
	"axpymany_amd64.s": "gen_axpymany.py",
	"gemm_amd64.s":     "gen_gemm.py",
	"gemv4_amd64.s":    "gen_gemv4.py",
	"gemv8_amd64.s":    "gen_gemv8.py",
	"quant_amd64.s":    "gen_quant.py",
}

// TestGeneratedAssemblyIsUpToDate: each generated assembly file is byte for
// byte what its generator prints, so an edit to either without the other
// (drift) fails here and in CI. The fix is `make generate`.
func TestGeneratedAssemblyIsUpToDate(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		oracle.Missing(t, "python3 runs the assembly generators: %v", err)
	}
	for out, gen := range generated {
		want, err := exec.Command(py, gen).Output()
		if err != nil {
			t.Fatalf("python3 %s: %v", gen, err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("read %s: %v", out, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what %s prints: run `make generate` and commit the result", out, gen)
		}
	}
}
