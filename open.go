package ndbg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ndbg/ndbg/internal/device"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// Options say which model Open loads and how it runs.
type Options struct {
	// Dir holds config.json, model.safetensors (or shards) and
	// tokenizer.json, or is a GGUF file (llama.cpp's format: a LLaMA model
	// with its tokenizer, F32, F16, BF16 or quantized: weights.OpenGGUFCheckpoint);
	// empty means the default model embedded in the binary.
	Dir string
	// Threads for the CPU; 0 means all cores.
	Threads int
	// Device is where the model computes: "cpu" (or ""), "cuda" (an
	// NVIDIA GPU: an error unless ndbg was built with the cuda tag) or
	// "auto" (cuda when built in and a GPU is present, else the CPU).
	Device string
	// Python is the interpreter that analyses programs and evaluates entry
	// arguments (or parses them, NoExec); empty means python3 on PATH.
	Python string
	// Unsandboxed runs the program's module code and entry arguments
	// without the operating-system sandbox (trace.Limits.Unsandboxed): only
	// when the user asks for it by name.
	Unsandboxed bool
	// SerialDecode runs every session's decode steps alone. By default the
	// one-token steps of sessions predicting concurrently (goroutines, a
	// server's clients) run as one batch on the shared model, each weight
	// read once for all (model.Batcher); a batch's sums run in another
	// order, so its logits can differ from a lone step's in the last bits.
	// SerialDecode makes results bit-identical to one session at a time.
	SerialDecode bool
}

// ErrNoDefaultModel: this build embeds no default model (see weights/).
var ErrNoDefaultModel = errors.New("ndbg: this build has no embedded default model; give a model directory")

// engineOptions opens the device opts.Device names, for the engine to own.
func (opts Options) engineOptions() (model.Options, error) {
	dev, err := device.Open(opts.Device)
	if err != nil {
		return model.Options{}, fmt.Errorf("ndbg: %w", err)
	}
	return model.Options{Device: dev, CloseDevice: true, Threads: opts.Threads}, nil
}

// Open loads a model: the one in opts.Dir, a directory or a GGUF file (its
// tensors memory-mapped), or the default model embedded in the binary.
func Open(ctx context.Context, opts Options) (*Model, error) {
	if opts.Dir == "" {
		fsys, ok := defaultModelFS()
		if !ok {
			return nil, ErrNoDefaultModel
		}
		return OpenFS(ctx, fsys, "embedded default", opts)
	}
	ck, err := weights.Open(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	if g := ck.GGUF(); g != nil {
		return assemble(ctx, ck, func() (*tokenizer.Tokenizer, error) { return tokenizer.FromGGUF(g) }, opts.Dir, opts)
	}
	return assemble(ctx, ck, jsonTokenizer(func() ([]byte, error) { return os.ReadFile(filepath.Join(opts.Dir, "tokenizer.json")) }), opts.Dir, opts)
}

// OpenFS loads a model from a file system (config.json, tokenizer.json and
// model.safetensors or its shards, checked as in a directory:
// weights.OpenFS), e.g. one embedded in a binary. Tensors are read in place
// where their dtype allows.
func OpenFS(ctx context.Context, fsys fs.FS, name string, opts Options) (*Model, error) {
	ck, err := weights.OpenFS(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	return assemble(ctx, ck, jsonTokenizer(func() ([]byte, error) { return fs.ReadFile(fsys, "tokenizer.json") }), name, opts)
}

// jsonTokenizer is the tokenizer of the tokenizer.json that read returns.
func jsonTokenizer(read func() ([]byte, error)) func() (*tokenizer.Tokenizer, error) {
	return func() (*tokenizer.Tokenizer, error) {
		data, err := read()
		if err != nil {
			return nil, err
		}
		return tokenizer.Parse(data)
	}
}

// assemble makes the Model of an opened checkpoint (which it owns: closed
// with the model, or here on failure), on the device opts name, and the
// tokenizer tok reads.
func assemble(ctx context.Context, ck *weights.Checkpoint, tok func() (*tokenizer.Tokenizer, error), name string, opts Options) (*Model, error) {
	mo, err := opts.engineOptions()
	if err != nil {
		ck.Close()
		return nil, err
	}
	eng, err := model.FromCheckpoint(ctx, ck, mo)
	if err != nil {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	m, err := withTokenizer(eng, tok, name, opts)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	return m, nil
}

// withTokenizer makes the Model of eng and the tokenizer read returns.
func withTokenizer(eng *model.Model, read func() (*tokenizer.Tokenizer, error), name string, opts Options) (*Model, error) {
	tok, err := read()
	if err != nil {
		return nil, err
	}
	return openModel(eng, tok, opts, name)
}
