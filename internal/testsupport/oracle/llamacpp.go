package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// LlamaCppEnv names a llama.cpp build directory (the folder cmake built
// into, holding bin/); without it the default is where bench/llamacpp.sh
// builds (~/.cache/ndbg/llamacpp/build, under XDG_CACHE_HOME when set).
const LlamaCppEnv = "LLAMACPP_BUILD"

// NoLlamaCppEnv, set to a non-empty value, makes the llama.cpp oracle
// skip even under RequireEnv: a CI machine that was given no llama.cpp
// source tree to build (.ci/run says so).
const NoLlamaCppEnv = "NDBG_NO_LLAMACPP"

// LlamaCppDir returns the bin folder of a llama.cpp build, the reference
// for llama.cpp's own file format and quantizers, holding every file of
// need (for example "libggml-base.so" or "llama-quantize"). When there is
// none the test ends as Missing says, naming how to build it.
func LlamaCppDir(tb testing.TB, need ...string) string {
	tb.Helper()
	if os.Getenv(NoLlamaCppEnv) != "" {
		tb.Skipf("oracle missing: llama.cpp (%s is set)", NoLlamaCppEnv)
	}
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

// LlamaCppSrcEnv names a llama.cpp source tree; without it, the tree the
// build of LlamaCppDir was configured from (its CMakeCache.txt).
const LlamaCppSrcEnv = "LLAMACPP_SRC"

// LlamaCppGGUFPy returns the gguf-py folder of a llama.cpp source tree
// (llama.cpp's own Python reader and writer of GGUF files, with numpy
// reference (de)quantizers), for PYTHONPATH, and a python3 that imports
// numpy; when either is missing the test ends as Missing says.
func LlamaCppGGUFPy(tb testing.TB) (pythonPath, python string) {
	tb.Helper()
	py := filepath.Join(llamaCppSrc(tb), "gguf-py")
	if _, err := os.Stat(filepath.Join(py, "gguf", "gguf_reader.py")); err != nil {
		Missing(tb, "llama.cpp's gguf-py: not in the llama.cpp source tree %s", filepath.Dir(py))
	}
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			return py, p
		}
	}
	Missing(tb, "gguf-py needs a python3 with numpy (apt-get install python3-numpy)")
	return "", ""
}

// llamaCppSrc returns the llama.cpp source tree: LlamaCppSrcEnv, or the
// tree the build of LlamaCppDir was configured from (its CMakeCache.txt).
func llamaCppSrc(tb testing.TB) string {
	tb.Helper()
	src := os.Getenv(LlamaCppSrcEnv)
	if src == "" {
		dir := filepath.Dir(LlamaCppDir(tb))
		cache, err := os.ReadFile(filepath.Join(dir, "CMakeCache.txt"))
		if err == nil {
			for _, line := range strings.Split(string(cache), "\n") {
				if v, ok := strings.CutPrefix(line, "CMAKE_HOME_DIRECTORY:INTERNAL="); ok {
					src = strings.TrimSpace(v)
				}
			}
		}
	}
	if _, err := os.Stat(filepath.Join(src, "include", "llama.h")); src == "" || err != nil {
		Missing(tb, "no llama.cpp source tree (set %s)", LlamaCppSrcEnv)
	}
	return src
}
