package ndbg

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/ndbg/ndbg/internal/device"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
)

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

// Open loads a model: the one in opts.Dir, or the default model embedded
// in the binary.
func Open(ctx context.Context, opts Options) (*Model, error) {
	if opts.Dir == "" {
		return openEmbedded(ctx, opts)
	}
	mo, err := opts.engineOptions()
	if err != nil {
		return nil, err
	}
	eng, err := model.Load(ctx, opts.Dir, mo)
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
