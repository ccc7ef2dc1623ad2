package weights

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"unicode/utf8"
)

// GGUF is llama.cpp's model file format (versions 2 and 3): a header of
// typed key-value metadata and tensor descriptions, then the tensors' data,
// each at an aligned offset. This is a reader written for ndbg rather than
// github.com/gpustack/gguf-parser-go, the maintained Go parser: that one
// reads the header only (ndbg still needs the tensor data mapped, each
// tensor's bytes checked against its type, shape and the file's end), and
// it would bring about ten modules (HTTP clients, gonum, json-iterator)
// for the subset of the format a LLaMA file uses. Every count, length,
// offset and size read from the file is checked before use; the file is
// memory-mapped and tensors alias the mapping.

// GGUF metadata value types (gguf_type).
const (
	ggufUint8   = 0
	ggufInt8    = 1
	ggufUint16  = 2
	ggufInt16   = 3
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufBool    = 7
	ggufString  = 8
	ggufArray   = 9
	ggufUint64  = 10
	ggufInt64   = 11
	ggufFloat64 = 12
)

// ggufMagic is "GGUF" read as a little-endian uint32.
const ggufMagic = 0x46554747

// ggufDefaultAlignment is the data alignment when general.alignment is absent.
const ggufDefaultAlignment = 32

// Limits on what a GGUF header may hold (llama.cpp's own are in the same
// range): they bound what a hostile file can make the parser allocate.
const (
	ggufMaxTensors = 1 << 20
	ggufMaxKVs     = 1 << 16
	ggufMaxString  = 1 << 30
	ggufMaxDims    = 4
)

// ggmlTypes maps the ggml_type ids of the tensor types ndbg loads to
// DTypes; ggmlNames names the others, for the error that refuses them.
var (
	ggmlTypes = map[uint32]DType{0: F32, 1: F16, 2: Q4_0, 6: Q5_0, 8: Q8_0, 12: Q4_K, 14: Q6_K, 30: BF16}
	ggmlNames = map[uint32]string{3: "Q4_1", 7: "Q5_1", 9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 13: "Q5_K", 15: "Q8_K",
		16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
		24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}
)

// ggmlType returns the ggml_type id of d (false for I32 and I64, which
// GGUF model tensors do not use here).
func ggmlType(d DType) (uint32, bool) {
	for id, t := range ggmlTypes {
		if t == d {
			return id, true
		}
	}
	return 0, false
}

// GGUFValue is one metadata value: a number, a bool, a string, or an
// array of one of those.
type GGUFValue struct {
	typ  uint32
	elem uint32 // an array's element type
	num  float64
	i64  int64
	u64  uint64
	str  string
	arr  []GGUFValue
}

// String returns a string value ("" and false for other types).
func (v GGUFValue) String() (string, bool) { return v.str, v.typ == ggufString }

// Int returns an integer value of any width (false for others, and for a
// uint64 above math.MaxInt64).
func (v GGUFValue) Int() (int64, bool) {
	switch v.typ {
	case ggufUint8, ggufUint16, ggufUint32, ggufUint64:
		return int64(v.u64), v.u64 <= math.MaxInt64
	case ggufInt8, ggufInt16, ggufInt32, ggufInt64:
		return v.i64, true
	}
	return 0, false
}

// Float returns a float32 or float64 value (false for others).
func (v GGUFValue) Float() (float64, bool) {
	return v.num, v.typ == ggufFloat32 || v.typ == ggufFloat64
}

// Bool returns a bool value.
func (v GGUFValue) Bool() (bool, bool) { return v.u64 != 0, v.typ == ggufBool }

// Array returns an array's elements (false for a scalar).
func (v GGUFValue) Array() ([]GGUFValue, bool) { return v.arr, v.typ == ggufArray }

// Strings returns an array of strings.
func (v GGUFValue) Strings() ([]string, bool) {
	if v.typ != ggufArray || v.elem != ggufString {
		return nil, false
	}
	out := make([]string, len(v.arr))
	for i, e := range v.arr {
		out[i] = e.str
	}
	return out, true
}

// Ints returns an array of integers.
func (v GGUFValue) Ints() ([]int64, bool) {
	if v.typ != ggufArray {
		return nil, false
	}
	out := make([]int64, len(v.arr))
	for i, e := range v.arr {
		n, ok := e.Int()
		if !ok {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

// ggufTensor is a tensor's description in the header.
type ggufTensor struct {
	name  string
	dtype DType
	shape []int // row-major, as Tensor (GGUF's dimensions reversed)
	off   int   // absolute offset of its data in the file
	size  int
}

// GGUFFile is an opened GGUF file: its metadata and its tensors, which
// alias the file's read-only mapping until Close.
type GGUFFile struct {
	path    string
	data    []byte
	release func() error
	version uint32
	keys    []string // metadata keys in file order
	meta    map[string]GGUFValue
	tensors []ggufTensor
	byName  map[string]int
}

// OpenGGUF memory-maps and parses a GGUF file. Its tensors alias the
// mapping: close the file after their last use.
func OpenGGUF(path string) (*GGUFFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("weights: %s: not a regular file", path)
	}
	data, release, err := mapFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", path, err)
	}
	g, err := parseGGUF(path, data, release)
	if err != nil {
		return nil, errors.Join(err, release())
	}
	return g, nil
}

// ParseGGUF parses a GGUF file held in memory (its tensors alias data).
func ParseGGUF(name string, data []byte) (*GGUFFile, error) {
	return parseGGUF(name, data, func() error { return nil })
}

// ggufReader is a bounds-checked cursor over the header.
type ggufReader struct {
	data []byte
	pos  int
	err  error
}

func (r *ggufReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s", r.pos, fmt.Sprintf(format, args...))
	}
}

func (r *ggufReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.data)-r.pos {
		r.fail("%s of %d bytes runs past the end of the file (%d bytes)", what, n, len(r.data))
		return nil
	}
	b := r.data[r.pos : r.pos+n]
	r.pos += n
	return b
}

func (r *ggufReader) u8(what string) uint8 {
	if b := r.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (r *ggufReader) u16(what string) uint16 {
	if b := r.take(2, what); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *ggufReader) u32(what string) uint32 {
	if b := r.take(4, what); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *ggufReader) u64(what string) uint64 {
	if b := r.take(8, what); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a uint64 count of items of at least minSize bytes each,
// refusing one the rest of the file cannot hold or above limit.
func (r *ggufReader) count(what string, minSize, limit int) int {
	n := r.u64(what)
	if r.err != nil {
		return 0
	}
	if n > uint64(limit) || n > uint64(len(r.data)-r.pos)/uint64(minSize) {
		r.fail("%s %d is more than the file can hold", what, n)
		return 0
	}
	return int(n)
}

func (r *ggufReader) str(what string) string {
	n := r.u64(what + " length")
	if r.err != nil {
		return ""
	}
	if n > ggufMaxString || n > uint64(len(r.data)-r.pos) {
		r.fail("%s of %d bytes runs past the end of the file", what, n)
		return ""
	}
	b := r.take(int(n), what)
	if !utf8.Valid(b) {
		r.fail("%s is not UTF-8", what)
		return ""
	}
	return string(b)
}

// value reads a metadata value of type typ (depth: arrays of arrays are
// refused, as llama.cpp's models never write them).
func (r *ggufReader) value(typ uint32, what string, nested bool) GGUFValue {
	v := GGUFValue{typ: typ}
	switch typ {
	case ggufUint8:
		v.u64 = uint64(r.u8(what))
	case ggufInt8:
		v.i64 = int64(int8(r.u8(what)))
	case ggufUint16:
		v.u64 = uint64(r.u16(what))
	case ggufInt16:
		v.i64 = int64(int16(r.u16(what)))
	case ggufUint32:
		v.u64 = uint64(r.u32(what))
	case ggufInt32:
		v.i64 = int64(int32(r.u32(what)))
	case ggufUint64:
		v.u64 = r.u64(what)
	case ggufInt64:
		v.i64 = int64(r.u64(what))
	case ggufFloat32:
		v.num = float64(math.Float32frombits(r.u32(what)))
	case ggufFloat64:
		v.num = math.Float64frombits(r.u64(what))
	case ggufBool:
		b := r.u8(what)
		if b > 1 {
			r.fail("%s: bool value %d", what, b)
		}
		v.u64 = uint64(b)
	case ggufString:
		v.str = r.str(what)
	case ggufArray:
		if nested {
			r.fail("%s: an array of arrays", what)
			return v
		}
		v.elem = r.u32(what + " element type")
		size := ggufValueSize(v.elem)
		if size == 0 {
			r.fail("%s: unknown array element type %d", what, v.elem)
			return v
		}
		n := r.count(what+" element count", size, math.MaxInt32)
		if r.err != nil {
			return v
		}
		v.arr = make([]GGUFValue, n)
		for i := range v.arr {
			v.arr[i] = r.value(v.elem, what, true)
			if r.err != nil {
				return v
			}
		}
	default:
		r.fail("%s: unknown value type %d", what, typ)
	}
	return v
}

// ggufValueSize is the least number of bytes a value of type t takes (a
// string its length; an array its element type and count), 0 for an
// unknown type.
func ggufValueSize(t uint32) int {
	switch t {
	case ggufUint8, ggufInt8, ggufBool:
		return 1
	case ggufUint16, ggufInt16:
		return 2
	case ggufUint32, ggufInt32, ggufFloat32:
		return 4
	case ggufUint64, ggufInt64, ggufFloat64, ggufString:
		return 8
	case ggufArray:
		return 12
	}
	return 0
}

func parseGGUF(path string, data []byte, release func() error) (*GGUFFile, error) {
	g, err := parseGGUFHeader(data)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: GGUF: %w", path, err)
	}
	g.path, g.data, g.release = path, data, release
	return g, nil
}

func parseGGUFHeader(data []byte) (*GGUFFile, error) {
	r := &ggufReader{data: data}
	if magic := r.u32("magic"); r.err == nil && magic != ggufMagic {
		return nil, fmt.Errorf("not a GGUF file (magic %#08x)", magic)
	}
	g := &GGUFFile{meta: map[string]GGUFValue{}, byName: map[string]int{}}
	g.version = r.u32("version")
	if r.err == nil && g.version != 2 && g.version != 3 {
		return nil, fmt.Errorf("GGUF version %d (only 2 and 3 are read)", g.version)
	}
	nt := r.count("tensor count", 8+4+8+4+8, ggufMaxTensors)
	nkv := r.count("metadata count", 8+4, ggufMaxKVs)
	for i := 0; i < nkv && r.err == nil; i++ {
		key := r.str(fmt.Sprintf("metadata key %d", i))
		typ := r.u32("value type of " + truncate(key, 64))
		v := r.value(typ, "metadata "+truncate(key, 64), false)
		if r.err != nil {
			break
		}
		if _, dup := g.meta[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice", truncate(key, 64))
		}
		g.meta[key] = v
		g.keys = append(g.keys, key)
	}
	align := ggufDefaultAlignment
	if v, ok := g.meta["general.alignment"]; ok && r.err == nil {
		a, isInt := v.Int()
		if !isInt || v.typ != ggufUint32 || a <= 0 || a&(a-1) != 0 || a > 1<<20 {
			return nil, fmt.Errorf("general.alignment must be a uint32 power of two up to 1 MiB")
		}
		align = int(a)
	}
	type info struct {
		name   string
		dims   []uint64
		typ    uint32
		offset uint64
	}
	infos := make([]info, 0, nt)
	for i := 0; i < nt && r.err == nil; i++ {
		var in info
		in.name = r.str(fmt.Sprintf("name of tensor %d", i))
		nd := r.u32("dimensions of " + truncate(in.name, 64))
		if r.err == nil && (nd == 0 || nd > ggufMaxDims) {
			return nil, fmt.Errorf("tensor %q has %d dimensions (1 to %d)", truncate(in.name, 64), nd, ggufMaxDims)
		}
		for range nd {
			in.dims = append(in.dims, r.u64("dimension of "+truncate(in.name, 64)))
		}
		in.typ = r.u32("type of " + truncate(in.name, 64))
		in.offset = r.u64("offset of " + truncate(in.name, 64))
		infos = append(infos, in)
	}
	if r.err != nil {
		return nil, r.err
	}
	start := (r.pos + align - 1) / align * align // the data section
	if start > len(data) {
		return nil, fmt.Errorf("the data section starts at %d, past the end of the file (%d bytes)", start, len(data))
	}
	for _, in := range infos {
		name := truncate(in.name, 64)
		if in.name == "" {
			return nil, errors.New("a tensor has an empty name")
		}
		if _, dup := g.byName[in.name]; dup {
			return nil, fmt.Errorf("tensor %q appears twice", name)
		}
		dt, ok := ggmlTypes[in.typ]
		if !ok {
			if n, known := ggmlNames[in.typ]; known {
				return nil, fmt.Errorf("tensor %q is %s, which ndbg does not load (F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K)", name, n)
			}
			return nil, fmt.Errorf("tensor %q has unknown type %d", name, in.typ)
		}
		shape := make([]int, len(in.dims))
		for j, d := range in.dims {
			if d == 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("tensor %q has dimension %d", name, d)
			}
			shape[len(in.dims)-1-j] = int(d)
		}
		n, okN := numElements(shape)
		if !okN {
			return nil, fmt.Errorf("tensor %q: shape %v overflows", name, shape)
		}
		if k, isK := dt.Kernels(); isK && dt.Quantized() && shape[len(shape)-1]%k.BlockLen() != 0 {
			return nil, fmt.Errorf("tensor %q: %s rows of %d values are not whole blocks of %d", name, dt, shape[len(shape)-1], k.BlockLen())
		}
		size, okS := dt.Bytes(n)
		if !okS {
			return nil, fmt.Errorf("tensor %q: shape %v of %s overflows", name, shape, dt)
		}
		if in.offset%uint64(align) != 0 {
			return nil, fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", name, in.offset, align)
		}
		if in.offset > uint64(len(data)-start) || uint64(size) > uint64(len(data)-start)-in.offset {
			return nil, fmt.Errorf("tensor %q: %d bytes at data offset %d run past the end of the file (%d bytes of data)",
				name, size, in.offset, len(data)-start)
		}
		g.byName[in.name] = len(g.tensors)
		g.tensors = append(g.tensors, ggufTensor{name: in.name, dtype: dt, shape: shape, off: start + int(in.offset), size: size})
	}
	// Tensors may not overlap (a file that aliases one tensor's bytes as
	// another's is not one llama.cpp writes).
	order := make([]int, len(g.tensors))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return g.tensors[a].off - g.tensors[b].off })
	for i := 1; i < len(order); i++ {
		a, b := g.tensors[order[i-1]], g.tensors[order[i]]
		if a.off+a.size > b.off {
			return nil, fmt.Errorf("tensors %q and %q overlap", truncate(a.name, 64), truncate(b.name, 64))
		}
	}
	return g, nil
}

// Path returns the file's path.
func (g *GGUFFile) Path() string { return g.path }

// Version returns the GGUF version (2 or 3).
func (g *GGUFFile) Version() uint32 { return g.version }

// Keys returns the metadata keys in file order.
func (g *GGUFFile) Keys() []string { return slices.Clone(g.keys) }

// Value returns the metadata value of key.
func (g *GGUFFile) Value(key string) (GGUFValue, bool) {
	v, ok := g.meta[key]
	return v, ok
}

// Names returns the tensor names in file order.
func (g *GGUFFile) Names() []string {
	out := make([]string, len(g.tensors))
	for i, t := range g.tensors {
		out[i] = t.name
	}
	return out
}

// Tensor returns the named tensor, aliasing the file's mapping.
func (g *GGUFFile) Tensor(name string) (*Tensor, error) {
	i, ok := g.byName[name]
	if !ok {
		return nil, fmt.Errorf("weights: %s: no tensor %q", g.path, truncate(name, 64))
	}
	t := g.tensors[i]
	return &Tensor{Name: t.name, DType: t.dtype, Shape: slices.Clone(t.shape), Data: g.data[t.off : t.off+t.size : t.off+t.size]}, nil
}

// Close unmaps the file; its tensors must not be used afterwards.
func (g *GGUFFile) Close() error {
	if g.release == nil {
		return nil
	}
	err := g.release()
	g.release = nil
	return err
}
