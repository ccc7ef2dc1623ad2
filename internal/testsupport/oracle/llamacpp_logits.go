package oracle

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// llamaLogitsC is a small program against llama.cpp's library (libllama):
// it loads a GGUF model on the CPU, decodes the token ids of its arguments
// in one batch at positions 0, 1, ..., and writes the logits of every
// position (vocab float32s each) to a file. llama.cpp's defaults otherwise,
// but for the KV cache's type (f16, llama.cpp's default, or f32).
const llamaLogitsC = `
#include <stdio.h>
#include <stdlib.h>
#include "llama.h"

static void quiet(enum ggml_log_level level, const char * text, void * user) { (void) level; (void) text; (void) user; }

int main(int argc, char ** argv) {
    if (argc < 7) { fprintf(stderr, "usage: logits MODEL OUT THREADS VOCAB f16|f32 TOKEN...\n"); return 1; }
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 2; }
    int n = argc - 6, threads = atoi(argv[3]), vocab = atoi(argv[4]);
    struct llama_context_params cp = llama_context_default_params();
    if (argv[5][1] == '3') { cp.type_k = GGML_TYPE_F32; cp.type_v = GGML_TYPE_F32; }
    cp.n_ctx = n + 16; cp.n_batch = n; cp.n_ubatch = n;
    cp.n_threads = threads; cp.n_threads_batch = threads;
    struct llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 2; }
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = atoi(argv[6 + i]); b.pos[i] = i; b.n_seq_id[i] = 1; b.seq_id[i][0] = 0; b.logits[i] = 1;
    }
    b.n_tokens = n;
    if (llama_decode(ctx, b) != 0) { fprintf(stderr, "llama_decode failed\n"); return 3; }
    FILE * f = fopen(argv[2], "wb");
    if (!f) return 4;
    for (int i = 0; i < n; i++) {
        const float * l = llama_get_logits_ith(ctx, i);
        if (!l || fwrite(l, sizeof(float), vocab, f) != (size_t) vocab) { fprintf(stderr, "no logits at %d\n", i); return 5; }
    }
    fclose(f);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
`

var (
	logitsOnce sync.Once
	logitsBin  string
	logitsErr  string
)

// LlamaCppLogits returns llama.cpp's logits (one row of vocab per token)
// for tokens decoded in one batch by the GGUF model at path, on threads
// CPU threads, with its default F16 KV cache: llamaLogitsC, compiled once
// per test binary with cc against the build of LlamaCppDir and the headers
// of its source tree. Without them the test ends as Missing says.
func LlamaCppLogits(tb testing.TB, path string, tokens []int, vocab, threads int) [][]float32 {
	tb.Helper()
	return LlamaCppLogitsKV(tb, path, tokens, vocab, threads, "f16")
}

// LlamaCppLogitsKV is LlamaCppLogits with a KV cache of type kv: "f16" or
// "f32" (what ndbg keeps for a quantized or F32 model).
func LlamaCppLogitsKV(tb testing.TB, path string, tokens []int, vocab, threads int, kv string) [][]float32 {
	tb.Helper()
	if kv != "f16" && kv != "f32" {
		tb.Fatalf("llama.cpp's KV cache: %q, want f16 or f32", kv)
	}
	bin := LlamaCppDir(tb, "libllama.so")
	src := llamaCppSrc(tb)
	logitsOnce.Do(func() {
		cc, err := exec.LookPath("cc")
		if err != nil {
			logitsErr = "no C compiler (cc) to build the logits program: " + err.Error()
			return
		}
		dir, err := os.MkdirTemp("", "ndbg-llama-logits")
		if err != nil {
			logitsErr = err.Error()
			return
		}
		c := filepath.Join(dir, "logits.c")
		if err := os.WriteFile(c, []byte(llamaLogitsC), 0o600); err != nil {
			logitsErr = err.Error()
			return
		}
		out := filepath.Join(dir, "logits")
		cmd := exec.Command(cc, "-O1", "-o", out, c, "-I"+filepath.Join(src, "include"), "-I"+filepath.Join(src, "ggml", "include"),
			"-L"+bin, "-lllama", "-lggml", "-lggml-base", "-Wl,-rpath,"+bin)
		if msg, err := cmd.CombinedOutput(); err != nil {
			logitsErr = "compiling the logits program against libllama: " + err.Error() + "\n" + string(msg)
			return
		}
		logitsBin = out
	})
	if logitsErr != "" {
		Missing(tb, "%s", logitsErr)
	}
	out := filepath.Join(tb.TempDir(), "logits.f32")
	args := []string{path, out, strconv.Itoa(threads), strconv.Itoa(vocab), kv}
	for _, t := range tokens {
		args = append(args, strconv.Itoa(t))
	}
	if msg, err := exec.Command(logitsBin, args...).CombinedOutput(); err != nil {
		tb.Fatalf("llama.cpp on %s: %v\n%s", path, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	if len(data) != 4*vocab*len(tokens) {
		tb.Fatalf("llama.cpp wrote %d bytes of logits, want %d", len(data), 4*vocab*len(tokens))
	}
	rows := make([][]float32, len(tokens))
	for i := range rows {
		rows[i] = make([]float32, vocab)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*(i*vocab+j):]))
		}
	}
	return rows
}
