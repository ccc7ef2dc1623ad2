package ndbg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/weights"
)

// openEmbedded loads the default model embedded in the binary.
func openEmbedded(ctx context.Context, opts Options) (*Model, error) {
	fsys, ok := defaultModelFS()
	if !ok {
		return nil, ErrNoDefaultModel
	}
	return OpenFS(ctx, fsys, "embedded default", opts)
}

// OpenFS loads a model from a file system (config.json, tokenizer.json and
// model.safetensors or its shards), e.g. one embedded in a binary. Tensors
// are read in place where their dtype allows.
func OpenFS(ctx context.Context, fsys fs.FS, name string, opts Options) (*Model, error) {
	read := func(file string) ([]byte, error) {
		data, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
		}
		return data, nil
	}
	cfgData, err := read("config.json")
	if err != nil {
		return nil, err
	}
	wcfg, err := weights.ParseConfig(cfgData)
	if err != nil {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	cfg, err := model.FromWeights(wcfg)
	if err != nil {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	files := []string{"model.safetensors"}
	if idx, err := fs.ReadFile(fsys, "model.safetensors.index.json"); err == nil {
		m, err := weights.ParseIndex(idx)
		if err != nil {
			return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
		}
		files = files[:0]
		for _, f := range m {
			if !slices.Contains(files, f) {
				files = append(files, f)
			}
		}
		slices.Sort(files)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	var src multiSource
	for _, f := range files {
		data, err := read(path.Clean(f))
		if err != nil {
			return nil, err
		}
		sf, err := weights.ParseSafetensors(name+"/"+f, data)
		if err != nil {
			return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
		}
		src = append(src, sf)
	}
	mo, err := opts.engineOptions()
	if err != nil {
		return nil, err
	}
	eng, err := model.New(ctx, cfg, src, mo)
	if err != nil {
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	tokData, err := read("tokenizer.json")
	if err != nil {
		eng.Close()
		return nil, err
	}
	tok, err := tokenizer.Parse(tokData)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("ndbg: model %s: %w", name, err)
	}
	m, err := OpenModel(eng, tok, opts.Python, name)
	if err != nil {
		eng.Close()
		return nil, err
	}
	m.unsandboxed = opts.Unsandboxed
	return m, nil
}

// multiSource finds each tensor in whichever shard has it.
type multiSource []*weights.File

func (s multiSource) Tensor(name string) (*weights.Tensor, error) {
	for _, f := range s {
		if slices.Contains(f.Names(), name) {
			return f.Tensor(name)
		}
	}
	return nil, fmt.Errorf("weights: tensor %s not in the checkpoint", name)
}
