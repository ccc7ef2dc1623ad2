package weights

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// WriteSafetensors writes tensors as one safetensors file with optional
// __metadata__. The header is padded with spaces to a multiple of 8 bytes
// and the data is laid out widest dtype first (F32, then F16 and BF16, each
// group in the given order), so every tensor is aligned for its dtype and
// readers can view it zero-copy. Names must be unique and non-empty and each
// Data must match its Shape and DType; nothing is written otherwise.
func WriteSafetensors(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	tensors = alignedOrder(tensors)
	hdr, err := encodeHeader(tensors, metadata)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := bw.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("weights: write: %w", err)
	}
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("weights: write: %w", err)
	}
	for i := range tensors {
		if _, err := bw.Write(tensors[i].Data); err != nil {
			return fmt.Errorf("weights: write %q: %w", tensors[i].Name, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("weights: write: %w", err)
	}
	return nil
}

// alignedOrder returns the tensors stably sorted by descending element
// size, the layout that keeps each one aligned for its dtype.
func alignedOrder(tensors []Tensor) []Tensor {
	out := slices.Clone(tensors)
	slices.SortStableFunc(out, func(a, b Tensor) int { return b.DType.Size() - a.DType.Size() })
	return out
}

// encodeHeader builds the padded JSON header: __metadata__ first, then the
// tensors in data order. A block-quantized tensor is written as U8 rows,
// marked in the metadata (QuantizedKeyPrefix).
func encodeHeader(tensors []Tensor, metadata map[string]string) ([]byte, error) {
	metadata, err := markQuantized(tensors, metadata)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteByte('{')
	sep := ""
	if len(metadata) > 0 {
		md, err := json.Marshal(metadata)
		if err != nil {
			return nil, fmt.Errorf("weights: encode metadata: %w", err)
		}
		b.WriteString(`"` + metadataKey + `":`)
		b.Write(md)
		sep = ","
	}
	seen := make(map[string]bool, len(tensors))
	off := 0
	for i := range tensors {
		t := &tensors[i]
		if t.Name == "" || t.Name == metadataKey {
			return nil, fmt.Errorf("weights: tensor %d: invalid name %q", i, t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("weights: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		if err := t.validate(); err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		name, err := json.Marshal(t.Name)
		if err != nil {
			return nil, fmt.Errorf("weights: encode name: %w", err)
		}
		dtype, shape := t.DType, t.Shape
		if dtype.Quantized() { // the rows' bytes (markQuantized)
			k, _ := dtype.Kernels()
			shape = slices.Clone(shape)
			shape[len(shape)-1] = k.RowBytes(shape[len(shape)-1])
			dtype = U8
		}
		b.WriteString(sep)
		sep = ","
		b.Write(name)
		b.WriteString(`:{"dtype":"` + dtype.String() + `","shape":[`)
		for j, d := range shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		end := off + len(t.Data)
		b.WriteString(`],"data_offsets":[` + strconv.Itoa(off) + "," + strconv.Itoa(end) + "]}")
		off = end
	}
	b.WriteByte('}')
	for (8+b.Len())%8 != 0 {
		b.WriteByte(' ')
	}
	if b.Len() > MaxHeaderSize {
		return nil, fmt.Errorf("weights: header of %d bytes exceeds the limit of %d", b.Len(), MaxHeaderSize)
	}
	return []byte(b.String()), nil
}

// markQuantized returns metadata with the mark (QuantizedKeyPrefix) of
// every block-quantized tensor added; a mark already there must be the
// tensor's own.
func markQuantized(tensors []Tensor, metadata map[string]string) (map[string]string, error) {
	out := maps.Clone(metadata)
	quantized := map[string]bool{}
	for _, t := range tensors {
		if !t.DType.Quantized() {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		key := QuantizedKeyPrefix + t.Name
		if v, ok := out[key]; ok && v != t.DType.String() {
			return nil, fmt.Errorf("weights: metadata %q is %q, but tensor %q is %s", key, v, t.Name, t.DType)
		}
		out[key] = t.DType.String()
		quantized[key] = true
	}
	for key := range out {
		if strings.HasPrefix(key, QuantizedKeyPrefix) && !quantized[key] {
			return nil, fmt.Errorf("weights: metadata %q marks a tensor that is not quantized here", key)
		}
	}
	return out, nil
}

// WriteSafetensorsFile writes tensors to path (see WriteSafetensors),
// replacing it atomically via a temporary file in the same directory.
func WriteSafetensorsFile(path string, tensors []Tensor, metadata map[string]string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	werr := WriteSafetensors(tmp, tensors, metadata)
	merr := tmp.Chmod(0o644) // as os.WriteFile would make it, not CreateTemp's 0600
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}

// WriteCheckpoint writes a checkpoint directory that Open reads: config.json
// (when cfg is not nil) and the tensors, either as one model.safetensors if
// they fit in maxShardBytes of tensor data (or maxShardBytes <= 0), or as
// shards model-0000i-of-0000n.safetensors plus
// model.safetensors.index.json. Shards take the tensors in the given order;
// a shard is closed when the next tensor would push it past maxShardBytes,
// so a tensor larger than the limit gets a shard of its own. A leftover
// model.safetensors or index from an earlier write of the other layout is
// removed so that Open sees the new one. dir must exist.
func WriteCheckpoint(dir string, cfg *Config, tensors []Tensor, maxShardBytes int64, metadata map[string]string) error {
	// Validate everything (config, names, sizes) before writing anything.
	if cfg != nil {
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("weights: %w", err)
		}
	}
	if _, err := encodeHeader(tensors, metadata); err != nil {
		return err
	}
	if cfg != nil {
		if err := WriteConfig(dir, cfg); err != nil {
			return err
		}
	}
	var shards [][]Tensor
	var total, cur int64
	for i, t := range tensors {
		n := int64(len(t.Data))
		total += n
		if i == 0 || (maxShardBytes > 0 && cur > 0 && cur+n > maxShardBytes) {
			shards = append(shards, nil)
			cur = 0
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], t)
		cur += n
	}
	if len(shards) <= 1 {
		if err := removeIfExists(filepath.Join(dir, IndexFileName)); err != nil {
			return err
		}
		return WriteSafetensorsFile(filepath.Join(dir, SingleFileName), tensors, metadata)
	}
	if err := removeIfExists(filepath.Join(dir, SingleFileName)); err != nil {
		return err
	}
	weightMap := map[string]string{}
	for i, shard := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		if err := WriteSafetensorsFile(filepath.Join(dir, name), shard, metadata); err != nil {
			return err
		}
		for _, t := range shard {
			weightMap[t.Name] = name
		}
	}
	index := struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}{map[string]any{"total_size": total}, weightMap}
	data, err := json.MarshalIndent(index, "", "  ")
	if err != nil {
		return fmt.Errorf("weights: encode index: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, IndexFileName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("weights: %w", err)
	}
	return nil
}
