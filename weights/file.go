package weights

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ndbg/ndbg/internal/regfile"
)

// File is one opened safetensors file. Its methods may be called
// concurrently, except Close.
type File struct {
	path     string
	data     []byte
	release  func() error
	hdr      *header
	byName   map[string]int // index into hdr.entries
	metadata map[string]string
}

// OpenFile memory-maps a safetensors file read-only and validates its
// header. Close it to unmap.
func OpenFile(path string) (*File, error) {
	f, size, err := regfile.Open(path) // a FIFO or a device is refused, without blocking
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	data, release, err := mapFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	file, err := newFile(path, data, release)
	if err != nil {
		return nil, errors.Join(err, release())
	}
	return file, nil
}

// ParseSafetensors validates an in-memory safetensors file. The returned
// File's tensors alias data. name is used in error messages only.
func ParseSafetensors(name string, data []byte) (*File, error) {
	return newFile(name, data, func() error { return nil })
}

func newFile(path string, data []byte, release func() error) (*File, error) {
	hdr, err := parseSafetensors(data)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	f := &File{path: path, data: data, release: release, hdr: hdr, byName: make(map[string]int, len(hdr.entries))}
	for i, e := range hdr.entries {
		f.byName[e.name] = i
	}
	f.metadata = hdr.metadata
	return f, nil
}

// Path returns the path (or name) the file was opened with.
func (f *File) Path() string { return f.path }

// Metadata returns a copy of the __metadata__ map (nil when absent).
func (f *File) Metadata() map[string]string {
	if f.metadata == nil {
		return nil
	}
	out := make(map[string]string, len(f.metadata))
	for k, v := range f.metadata {
		out[k] = v
	}
	return out
}

// Names returns the tensor names in sorted order.
func (f *File) Names() []string {
	names := make([]string, 0, len(f.byName))
	for n := range f.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Has reports whether the file holds a tensor with this name.
func (f *File) Has(name string) bool {
	_, ok := f.byName[name]
	return ok
}

// Tensor returns the named tensor; its Data aliases the mapping.
func (f *File) Tensor(name string) (*Tensor, error) {
	if f.data == nil {
		return nil, fmt.Errorf("weights: %s: file is closed", f.path)
	}
	i, ok := f.byName[name]
	if !ok {
		return nil, fmt.Errorf("weights: %s: no tensor %q", f.path, name)
	}
	e := &f.hdr.entries[i]
	base := f.hdr.dataOff
	return &Tensor{
		Name:  e.name,
		DType: e.dtype,
		Shape: slices.Clone(e.shape),
		Data:  f.data[base+e.begin : base+e.end : base+e.end],
	}, nil
}

// Close unmaps the file. Tensors obtained from it must not be used
// afterwards. Closing twice is a no-op.
func (f *File) Close() error {
	if f.data == nil {
		return nil
	}
	f.data = nil
	if err := f.release(); err != nil {
		return fmt.Errorf("weights: %s: unmap: %w", f.path, err)
	}
	return nil
}
