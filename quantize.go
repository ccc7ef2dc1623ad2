package ndbg

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ndbg/ndbg/internal/quantize"
	"github.com/ndbg/ndbg/internal/regfile"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// QuantizeTypes are the types Quantize writes: "f32", "bf16", and
// llama.cpp's quantization mixes "q8_0", "q4_0" and "q4_k_m".
var QuantizeTypes = quantize.Types

// Quantize writes the model opts names (opts.Dir, a Hugging Face checkpoint
// or a GGUF file; empty: the embedded default model) to w as a GGUF file of
// type typ (QuantizeTypes), with its tokenizer, quantized as llama.cpp's
// llama-quantize quantizes it (the same types per tensor, the same bytes:
// weights.QuantMix, kernels.QuantizeRow), on opts.Threads threads. llama.cpp
// reads the file; so does Open (opts.Dir naming it).
func Quantize(ctx context.Context, opts Options, typ string, w io.Writer) error {
	var ck *weights.Checkpoint
	var tok *tokenizer.Tokenizer
	var err error
	name := opts.Dir
	switch {
	case opts.Dir == "":
		fsys, ok := defaultModelFS()
		if !ok {
			return ErrNoDefaultModel
		}
		name = "ndbg default " + DefaultModelID()
		if ck, err = weights.OpenFS(fsys, "embedded default"); err == nil {
			tok, err = fsTokenizer(fsys, "embedded default")
		}
	default:
		if ck, err = weights.Open(opts.Dir); err == nil {
			tok, err = checkpointTokenizer(ck, opts.Dir)
			name = filepath.Base(opts.Dir)
		}
	}
	if ck != nil {
		defer ck.Close()
	}
	if err != nil {
		return fmt.Errorf("ndbg: quantize: %w", err)
	}
	if err := quantize.Checkpoint(ctx, ck, tok, name, typ, opts.Threads, w); err != nil {
		return fmt.Errorf("ndbg: %w", err)
	}
	return nil
}

// QuantizeSafetensors writes the model opts names (opts.Dir, a Hugging
// Face checkpoint; empty: the embedded default model) as a Hugging Face
// checkpoint directory dir (config.json, tokenizer.json, model.safetensors)
// whose matrices are of type typ (QuantizeTypes), the same bytes Quantize
// writes to a GGUF file: a quantized tensor is stored as U8 rows of
// llama.cpp's blocks marked in the file's metadata
// (weights.QuantizedKeyPrefix). Open reads the directory. A GGUF model has
// no tokenizer.json to write: write it as GGUF (Quantize).
func QuantizeSafetensors(ctx context.Context, opts Options, typ, dir string) error {
	var ck *weights.Checkpoint
	var tokJSON []byte
	var err error
	if opts.Dir == "" {
		fsys, ok := defaultModelFS()
		if !ok {
			return ErrNoDefaultModel
		}
		if ck, err = weights.OpenFS(fsys, "embedded default"); err == nil {
			tokJSON, err = regfile.ReadFS(fsys, tokenizerName, filepath.Join("embedded default", tokenizerName), tokenizer.MaxFileSize)
		}
	} else if ck, err = weights.Open(opts.Dir); err == nil {
		if ck.GGUF() != nil {
			err = fmt.Errorf("%s is a GGUF file, whose tokenizer has no tokenizer.json: quantize it to GGUF", opts.Dir)
		} else {
			tokJSON, err = regfile.Read(filepath.Join(opts.Dir, tokenizerName), tokenizer.MaxFileSize)
		}
	}
	if ck != nil {
		defer ck.Close()
	}
	if err == nil {
		_, err = tokenizer.Parse(tokJSON) // what is written must load
	}
	if err != nil {
		return fmt.Errorf("ndbg: quantize: %w", err)
	}
	if err := quantize.Safetensors(ctx, ck, tokJSON, typ, opts.Threads, dir); err != nil {
		return fmt.Errorf("ndbg: %w", err)
	}
	return nil
}
