package weights

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ndbg/ndbg/internal/regfile"
)

// File names of the Hugging Face checkpoint layout.
const (
	ConfigName      = "config.json"
	SingleFileName  = "model.safetensors"
	IndexFileName   = "model.safetensors.index.json"
	maxIndexSize    = 64 << 20
	maxShardNameLen = 255
)

// Checkpoint is an opened model directory: its validated Config and its
// memory-mapped tensors. Its methods may be called concurrently, except
// Close. It is not copyable.
type Checkpoint struct {
	Dir    string
	Config *Config
	files  []*File
	owner  map[string]*File // tensor name -> file holding it

	mu   sync.Mutex
	used map[string]bool // names returned by Tensor or Require

	gguf      *GGUFFile         // the file of a checkpoint opened from GGUF (files and owner are then empty)
	ggufNames map[string]string // Hugging Face name -> GGUF name
}

// Open reads dir/config.json and the tensors in dir/model.safetensors or, if
// that is absent, in the shards listed by dir/model.safetensors.index.json.
// Every shard name must be a plain file name inside dir, every tensor the
// index lists must be in the shard it names, and every tensor of a shard
// must be listed. A path that is a file rather than a directory is a GGUF
// file, opened by OpenGGUFCheckpoint. Close the checkpoint to unmap the
// files.
func Open(dir string) (*Checkpoint, error) {
	if st, err := os.Stat(dir); err == nil && st.Mode().IsRegular() {
		return OpenGGUFCheckpoint(dir)
	}
	return openSource(dirSource(dir))
}

// OpenFS is Open for a checkpoint in a file system (e.g. one embedded in
// the binary), name saying which in messages: the same files, the same
// checks. Tensors alias the bytes fs.ReadFile returns (an embed.FS's are
// the binary's own, not copied).
func OpenFS(fsys fs.FS, name string) (*Checkpoint, error) { return openSource(fsSource(fsys, name)) }

// openSource opens the checkpoint that src reads, config and tensors.
func openSource(src source) (*Checkpoint, error) {
	cfg, err := loadConfig(src)
	if err != nil {
		return nil, err
	}
	ck, err := openTensors(src)
	if err != nil {
		return nil, err
	}
	ck.Config = cfg
	if err := ck.checkAgainstConfig(); err != nil {
		return nil, errors.Join(err, ck.Close())
	}
	return ck, nil
}

// torchDTypes are the 2-byte float types of config.json's torch_dtype.
var torchDTypes = map[string]DType{"bfloat16": BF16, "float16": F16, "half": F16}

// checkAgainstConfig refuses tensors that contradict config.json where
// nothing else would notice and the model would compute garbage:
//
//   - F16 and BF16 have the same size, so a tensor labelled with the one
//     whose bytes are the other passes every size check and loads as
//     nonsense values. Every 2-byte float tensor must have the one dtype
//     torch_dtype names (when it names a 2-byte type), and a checkpoint
//     must not mix the two.
//   - With tie_word_embeddings the output head is the embedding, and an
//     lm_head.weight beside it would be silently ignored: one that differs
//     from the embedding is refused (one equal to it, as some exporters
//     write, says nothing new).
func (ck *Checkpoint) checkAgainstConfig() error {
	want, named := torchDTypes[ck.Config.TorchDType]
	var first *Tensor
	for _, n := range ck.Names() {
		t, err := ck.owner[n].Tensor(n)
		if err != nil {
			return err
		}
		if t.DType != F16 && t.DType != BF16 {
			continue
		}
		if named && t.DType != want {
			return fmt.Errorf("weights: %s: tensor %q is labelled %s, but config.json's torch_dtype is %q (%s): "+
				"the two 2-byte float formats have the same size, so a wrong label loads as wrong values; "+
				"label every tensor with the format its bytes are in", ck.owner[n].Path(), truncate(n, 64), t.DType,
				ck.Config.TorchDType, want)
		}
		if first == nil {
			first = t
		} else if t.DType != first.DType {
			return fmt.Errorf("weights: %s: tensor %q is %s but %q is %s: a checkpoint mixes the two 2-byte float "+
				"formats only when a label is wrong (the bytes of one read as the other give wrong values)",
				ck.Dir, truncate(n, 64), t.DType, truncate(first.Name, 64), first.DType)
		}
	}
	if ck.Config.TieWordEmbeddings && ck.Has(LMHead) && ck.Has(EmbedTokens) {
		head, err := ck.owner[LMHead].Tensor(LMHead)
		if err != nil {
			return err
		}
		embed, err := ck.owner[EmbedTokens].Tensor(EmbedTokens)
		if err != nil {
			return err
		}
		if head.DType != embed.DType || !slices.Equal(head.Shape, embed.Shape) || !bytes.Equal(head.Data, embed.Data) {
			return fmt.Errorf("weights: %s: config.json says tie_word_embeddings, so the output head is %s, "+
				"but the checkpoint also holds a different %s, which would be ignored: set tie_word_embeddings "+
				"to false to use it, or remove it", ck.Dir, EmbedTokens, LMHead)
		}
	}
	return nil
}

// OpenTensors is Open without config.json: Config is left nil.
func OpenTensors(dir string) (*Checkpoint, error) { return openTensors(dirSource(dir)) }

func openTensors(src source) (*Checkpoint, error) {
	ck := &Checkpoint{Dir: src.name, owner: map[string]*File{}, used: map[string]bool{}}
	single, err := src.exists(SingleFileName)
	if err != nil {
		return nil, err
	}
	if single {
		f, err := src.open(SingleFileName)
		if err != nil {
			return nil, err
		}
		ck.files = []*File{f}
		for _, n := range f.Names() {
			ck.owner[n] = f
		}
		return ck, nil
	}
	if err := ck.openSharded(src); err != nil {
		return nil, errors.Join(err, ck.Close())
	}
	return ck, nil
}

func (ck *Checkpoint) openSharded(src source) error {
	indexPath := src.path(IndexFileName)
	weightMap, err := readIndex(src)
	if err != nil {
		return err
	}
	// Open each distinct shard once, in sorted order for stable errors.
	shards := map[string]*File{}
	var names []string
	for _, shard := range weightMap {
		if _, ok := shards[shard]; !ok {
			shards[shard] = nil
			names = append(names, shard)
		}
	}
	slices.Sort(names)
	for _, shard := range names {
		f, err := src.open(shard)
		if err != nil {
			return err
		}
		shards[shard] = f
		ck.files = append(ck.files, f)
	}
	for tensor, shard := range weightMap {
		f := shards[shard]
		if !f.Has(tensor) {
			return fmt.Errorf("weights: %s: tensor %q is mapped to %s, which does not hold it", indexPath, tensor, shard)
		}
		ck.owner[tensor] = f
	}
	for _, f := range ck.files {
		for _, n := range f.Names() {
			if ck.owner[n] != f {
				return fmt.Errorf("weights: %s: tensor %q is not mapped to this shard by %s", f.Path(), n, IndexFileName)
			}
		}
	}
	return nil
}

// readIndex parses src's index file and validates its shard names.
func readIndex(src source) (map[string]string, error) {
	path := src.path(IndexFileName)
	data, err := src.read(IndexFileName, maxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("weights: %s: neither %s nor %s exists", src.name, SingleFileName, IndexFileName)
	}
	if err != nil {
		return nil, err
	}
	weightMap, err := ParseIndex(data)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	return weightMap, nil
}

// ParseIndex decodes a model.safetensors.index.json and returns its
// weight_map (tensor name -> shard file name). Shard names must be plain
// file names ending in .safetensors: no directories, no "..", nothing
// absolute, so an index can only point inside its own directory.
func ParseIndex(data []byte) (map[string]string, error) {
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&idx); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	if len(idx.WeightMap) == 0 {
		return nil, errors.New("weight_map is missing or empty")
	}
	for tensor, shard := range idx.WeightMap {
		if tensor == "" {
			return nil, errors.New("weight_map has an empty tensor name")
		}
		if err := checkShardName(shard); err != nil {
			return nil, fmt.Errorf("weight_map[%q]: %w", truncate(tensor, 64), err)
		}
	}
	return idx.WeightMap, nil
}

func checkShardName(s string) error {
	switch {
	case s == "" || len(s) > maxShardNameLen:
		return fmt.Errorf("shard name of length %d", len(s))
	case strings.ContainsAny(s, `/\:`) || strings.ContainsRune(s, 0):
		return fmt.Errorf("shard %q is not a plain file name", truncate(s, 64))
	case s == "." || s == ".." || strings.HasPrefix(s, "."):
		return fmt.Errorf("shard %q is not a plain file name", truncate(s, 64))
	case !strings.HasSuffix(s, ".safetensors"):
		return fmt.Errorf("shard %q does not end in .safetensors", truncate(s, 64))
	case filepath.Base(s) != s || filepath.IsAbs(s) || !filepath.IsLocal(s):
		return fmt.Errorf("shard %q is not a plain file name", truncate(s, 64))
	}
	return nil
}

// Names returns every tensor name in sorted order.
func (ck *Checkpoint) Names() []string {
	names := make([]string, 0, len(ck.owner)+len(ck.ggufNames))
	for n := range ck.owner {
		names = append(names, n)
	}
	for n := range ck.ggufNames {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Has reports whether the checkpoint holds the named tensor.
func (ck *Checkpoint) Has(name string) bool {
	_, ok := ck.owner[name]
	_, inGGUF := ck.ggufNames[name]
	return ok || inGGUF
}

// Tensor returns the named tensor; its Data aliases the file mapping.
func (ck *Checkpoint) Tensor(name string) (*Tensor, error) {
	var t *Tensor
	var err error
	if ck.gguf != nil {
		t, err = ck.ggufTensor(name)
	} else if f, ok := ck.owner[name]; !ok {
		return nil, fmt.Errorf("weights: %s: no tensor %q", ck.Dir, name)
	} else {
		t, err = f.Tensor(name)
	}
	if err != nil {
		return nil, err
	}
	ck.mu.Lock()
	ck.used[name] = true
	ck.mu.Unlock()
	return t, nil
}

// Unused returns, sorted, the names of tensors never returned by Tensor or
// Require. After binding a model, a non-empty result means the checkpoint
// holds weights the architecture does not use (a wrong config, or a
// checkpoint of another architecture).
func (ck *Checkpoint) Unused() []string {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	var out []string
	for n := range ck.owner {
		if !ck.used[n] {
			out = append(out, n)
		}
	}
	for n := range ck.ggufNames {
		if !ck.used[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Require returns the named tensor after checking that it exists and has
// exactly the given shape. The error names the file and the tensor.
func (ck *Checkpoint) Require(name string, shape ...int) (*Tensor, error) {
	if !ck.Has(name) {
		return nil, fmt.Errorf("weights: %s: missing tensor %q (want shape %v)", ck.Dir, name, shape)
	}
	t, err := ck.Tensor(name)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(t.Shape, shape) {
		path := ck.Dir
		if f, ok := ck.owner[name]; ok {
			path = f.Path()
		}
		return nil, fmt.Errorf("weights: %s: tensor %q has shape %v, want %v", path, name, t.Shape, shape)
	}
	return t, nil
}

// Close unmaps every file. Tensors obtained from the checkpoint must not be
// used afterwards.
func (ck *Checkpoint) Close() error {
	var errs []error
	for _, f := range ck.files {
		errs = append(errs, f.Close())
	}
	if ck.gguf != nil {
		errs = append(errs, ck.gguf.Close())
	}
	return errors.Join(errs...)
}

// source reads the files of a checkpoint: a directory's (tensors
// memory-mapped) or a file system's.
type source struct {
	name string                                       // the directory, or the file system's name
	stat func(file string) (fs.FileInfo, error)       // a file's mode and size
	read func(file string, max int64) ([]byte, error) // a JSON side file of at most max bytes
	open func(file string) (*File, error)             // a safetensors file
}

// path names a file of the checkpoint in messages.
func (s source) path(file string) string { return filepath.Join(s.name, file) }

// exists reports whether the checkpoint has file.
func (s source) exists(file string) (bool, error) {
	_, err := s.stat(file)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("weights: %s: %w", s.name, err)
	}
	return true, nil
}

// dirSource reads the checkpoint in directory dir.
func dirSource(dir string) source {
	return source{
		name: dir,
		stat: func(file string) (fs.FileInfo, error) { return os.Stat(filepath.Join(dir, file)) },
		read: func(file string, max int64) ([]byte, error) { return readSmallFile(filepath.Join(dir, file), max) },
		open: func(file string) (*File, error) { return OpenFile(filepath.Join(dir, file)) },
	}
}

// fsSource reads the checkpoint at the root of fsys, called name: each
// file only if it is a regular file, the JSON side files up to their limit.
func fsSource(fsys fs.FS, name string) source {
	s := source{name: name, stat: func(file string) (fs.FileInfo, error) { return fs.Stat(fsys, file) }}
	s.read = func(file string, max int64) ([]byte, error) {
		data, err := regfile.ReadFS(fsys, file, s.path(file), max)
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		return data, nil
	}
	s.open = func(file string) (*File, error) {
		data, err := regfile.ReadFS(fsys, file, s.path(file), -1)
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		return ParseSafetensors(s.path(file), data)
	}
	return s
}

// readSmallFile reads a JSON side file (config, index) of at most max
// bytes, only if it is a regular file, so that a FIFO or a device planted
// in a checkpoint directory cannot block or flood the read.
func readSmallFile(path string, max int64) ([]byte, error) {
	data, err := regfile.Read(path, max)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	return data, nil
}
