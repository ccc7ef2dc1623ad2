package oracle

import (
	"os"
	"path/filepath"
	"testing"
)

// LlamaCppEnv names a llama.cpp build directory (the folder cmake built
// into, holding bin/); without it the default is where bench/llamacpp.sh
// builds (~/.cache/ndbg/llamacpp/build, under XDG_CACHE_HOME when set).
const LlamaCppEnv = "LLAMACPP_BUILD"

// LlamaCppDir returns the bin folder of a llama.cpp build, the reference
// for llama.cpp's own file format and quantizers, holding every file of
// need (for example "libggml-base.so" or "llama-quantize"). When there is
// none the test ends as Missing says, naming how to build it.
func LlamaCppDir(tb testing.TB, need ...string) string {
	tb.Helper()
	dir := os.Getenv(LlamaCppEnv)
	if dir == "" {
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "ndbg", "llamacpp", "build")
	}
	bin := filepath.Join(dir, "bin")
	for _, f := range need {
		if _, err := os.Stat(filepath.Join(bin, f)); err != nil {
			Missing(tb, "llama.cpp's %s: no %s (build llama.cpp there, e.g. bench/llamacpp.sh --build-only --src DIR, or set %s)", f, bin, LlamaCppEnv)
		}
	}
	return bin
}
