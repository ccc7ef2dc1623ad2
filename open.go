package ndbg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/ndbg/ndbg/internal/device"
	"github.com/ndbg/ndbg/internal/regfile"
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
	return assemble(ctx, ck, func() (*tokenizer.Tokenizer, error) { return checkpointTokenizer(ck, opts.Dir) }, opts.Dir, opts)
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
	return assemble(ctx, ck, func() (*tokenizer.Tokenizer, error) { return fsTokenizer(fsys, name) }, name, opts)
}

// tokenizerName is the tokenizer's file in a model directory.
const tokenizerName = "tokenizer.json"

// checkpointTokenizer reads the tokenizer of the checkpoint opened from
// path: a GGUF file's from its metadata, a directory's tokenizer.json.
func checkpointTokenizer(ck *weights.Checkpoint, path string) (*tokenizer.Tokenizer, error) {
	if g := ck.GGUF(); g != nil {
		return tokenizer.FromGGUF(g)
	}
	return tokenizer.Load(filepath.Join(path, tokenizerName))
}

// fsTokenizer reads the tokenizer.json of a model in fsys (name says
// which, in errors).
func fsTokenizer(fsys fs.FS, name string) (*tokenizer.Tokenizer, error) {
	path := filepath.Join(name, tokenizerName)
	data, err := regfile.ReadFS(fsys, tokenizerName, path, tokenizer.MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	tok, err := tokenizer.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %s: %w", path, err)
	}
	return tok, nil
}

// assemble makes the Model of an opened checkpoint (which it owns: closed
// with the model, or here on failure), on the device opts name, and the
// tokenizer that loadTokenizer reads.
func assemble(ctx context.Context, ck *weights.Checkpoint, loadTokenizer func() (*tokenizer.Tokenizer, error), name string, opts Options) (*Model, error) {
	mo, err := opts.engineOptions()
	if err != nil {
		ck.Close()
		return nil, err
	}
	tok, err := loadTokenizer() // before the weights: it is read in a moment, they are bound in seconds
	if err != nil {
		ck.Close()
		if mo.Device != nil {
			err = errors.Join(err, mo.Device.Close())
		}
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	eng, err := model.FromCheckpoint(ctx, ck, mo)
	if err != nil {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	m, err := openModel(eng, tok, opts, name)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	return m, nil
}
