package ndbg

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
)

// ErrNoDefaultModel: this build embeds no default model (see weights/).
var ErrNoDefaultModel = errors.New("ndbg: this build has no embedded default model; give a model directory")

// Open loads a model: the one in opts.Dir, or the default model embedded
// in the binary.
func Open(ctx context.Context, opts Options) (*Model, error) {
	if opts.Dir == "" {
		return openEmbedded(ctx, opts)
	}
	eng, err := model.Load(ctx, opts.Dir, model.Options{Threads: opts.Threads})
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	tok, err := tokenizer.Load(filepath.Join(opts.Dir, "tokenizer.json"))
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	m, err := OpenModel(eng, tok, opts.Python, opts.Dir)
	if err != nil {
		eng.Close()
		return nil, err
	}
	m.unsandboxed = opts.Unsandboxed
	return m, nil
}
