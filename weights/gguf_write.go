package weights

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
)

// GGUFKV is one metadata entry to write.
type GGUFKV struct {
	Key   string
	Value GGUFValue
}

// Constructors of metadata values to write.

// GGUFString is a string value.
func GGUFString(s string) GGUFValue { return GGUFValue{typ: ggufString, str: s} }

// GGUFUint32 is a uint32 value.
func GGUFUint32(v uint32) GGUFValue { return GGUFValue{typ: ggufUint32, u64: uint64(v)} }

// GGUFInt32 is an int32 value.
func GGUFInt32(v int32) GGUFValue { return GGUFValue{typ: ggufInt32, i64: int64(v)} }

// GGUFFloat32 is a float32 value.
func GGUFFloat32(v float32) GGUFValue { return GGUFValue{typ: ggufFloat32, num: float64(v)} }

// GGUFBool is a bool value.
func GGUFBool(v bool) GGUFValue {
	b := uint64(0)
	if v {
		b = 1
	}
	return GGUFValue{typ: ggufBool, u64: b}
}

// GGUFStrings is an array of strings.
func GGUFStrings(ss []string) GGUFValue {
	arr := make([]GGUFValue, len(ss))
	for i, s := range ss {
		arr[i] = GGUFString(s)
	}
	return GGUFValue{typ: ggufArray, elem: ggufString, arr: arr}
}

// GGUFInt32s is an array of int32s.
func GGUFInt32s(vs []int32) GGUFValue {
	arr := make([]GGUFValue, len(vs))
	for i, v := range vs {
		arr[i] = GGUFInt32(v)
	}
	return GGUFValue{typ: ggufArray, elem: ggufInt32, arr: arr}
}

// GGUFTensorInfo describes a tensor to write: its data is DType.Bytes of
// its elements, supplied by WriteGGUF's callback.
type GGUFTensorInfo struct {
	Name  string
	DType DType
	Shape []int // row-major (written reversed, as GGUF orders dimensions)
}

// WriteGGUF writes a GGUF version 3 file: the metadata kvs in order, the
// tensors' descriptions, then each tensor's data, which data(i, w) writes
// (exactly the tensor's size; anything else is an error), at offsets
// aligned to 32 bytes (general.alignment, if among kvs, must be 32). The
// data is asked for one tensor at a time, so a file larger than memory
// can be written.
func WriteGGUF(w io.Writer, kvs []GGUFKV, tensors []GGUFTensorInfo, data func(i int, w io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var hdr []byte
	u32 := func(v uint32) { hdr = binary.LittleEndian.AppendUint32(hdr, v) }
	u64 := func(v uint64) { hdr = binary.LittleEndian.AppendUint64(hdr, v) }
	str := func(s string) { u64(uint64(len(s))); hdr = append(hdr, s...) }
	var value func(v GGUFValue) error
	value = func(v GGUFValue) error {
		switch v.typ {
		case ggufUint8, ggufBool:
			hdr = append(hdr, byte(v.u64))
		case ggufInt8:
			hdr = append(hdr, byte(v.i64))
		case ggufUint16:
			hdr = binary.LittleEndian.AppendUint16(hdr, uint16(v.u64))
		case ggufInt16:
			hdr = binary.LittleEndian.AppendUint16(hdr, uint16(v.i64))
		case ggufUint32:
			u32(uint32(v.u64))
		case ggufInt32:
			u32(uint32(int32(v.i64)))
		case ggufUint64:
			u64(v.u64)
		case ggufInt64:
			u64(uint64(v.i64))
		case ggufFloat32:
			u32(math.Float32bits(float32(v.num)))
		case ggufFloat64:
			u64(math.Float64bits(v.num))
		case ggufString:
			str(v.str)
		case ggufArray:
			u32(v.elem)
			u64(uint64(len(v.arr)))
			for _, e := range v.arr {
				if e.typ != v.elem {
					return fmt.Errorf("array of type %d holds a value of type %d", v.elem, e.typ)
				}
				if err := value(e); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("unknown value type %d", v.typ)
		}
		return nil
	}
	u32(ggufMagic)
	u32(3)
	u64(uint64(len(tensors)))
	u64(uint64(len(kvs)))
	seen := map[string]bool{}
	for _, kv := range kvs {
		if seen[kv.Key] {
			return fmt.Errorf("weights: GGUF: metadata key %q given twice", kv.Key)
		}
		seen[kv.Key] = true
		if kv.Key == "general.alignment" {
			if a, _ := kv.Value.Int(); a != ggufDefaultAlignment {
				return fmt.Errorf("weights: GGUF: general.alignment %d (the writer aligns to %d)", a, ggufDefaultAlignment)
			}
		}
		str(kv.Key)
		u32(kv.Value.typ)
		if err := value(kv.Value); err != nil {
			return fmt.Errorf("weights: GGUF: metadata %q: %w", kv.Key, err)
		}
	}
	sizes := make([]int, len(tensors))
	off := 0
	names := map[string]bool{}
	for i, t := range tensors {
		typ, ok := ggmlType(t.DType)
		if !ok {
			return fmt.Errorf("weights: GGUF: tensor %q: %v cannot be written", t.Name, t.DType)
		}
		if t.Name == "" || names[t.Name] {
			return fmt.Errorf("weights: GGUF: tensor name %q empty or repeated", t.Name)
		}
		names[t.Name] = true
		if len(t.Shape) == 0 || len(t.Shape) > ggufMaxDims || slices.Contains(t.Shape, 0) {
			return fmt.Errorf("weights: GGUF: tensor %q: shape %v (1 to %d positive dimensions)", t.Name, t.Shape, ggufMaxDims)
		}
		if k, _ := t.DType.Kernels(); t.DType.Quantized() && t.Shape[len(t.Shape)-1]%k.BlockLen() != 0 {
			return fmt.Errorf("weights: GGUF: tensor %q: rows of %d values are not whole %v blocks", t.Name, t.Shape[len(t.Shape)-1], t.DType)
		}
		n, okN := numElements(t.Shape)
		size, okS := t.DType.Bytes(n)
		if !okN || !okS {
			return fmt.Errorf("weights: GGUF: tensor %q: shape %v of %v overflows", t.Name, t.Shape, t.DType)
		}
		sizes[i] = size
		str(t.Name)
		u32(uint32(len(t.Shape)))
		for j := len(t.Shape) - 1; j >= 0; j-- {
			u64(uint64(t.Shape[j]))
		}
		u32(typ)
		u64(uint64(off))
		off += (size + ggufDefaultAlignment - 1) / ggufDefaultAlignment * ggufDefaultAlignment
	}
	pad := func(n int) []byte {
		return make([]byte, (ggufDefaultAlignment-n%ggufDefaultAlignment)%ggufDefaultAlignment)
	}
	hdr = append(hdr, pad(len(hdr))...)
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("weights: GGUF: write: %w", err)
	}
	for i, t := range tensors {
		cw := &countWriter{w: bw}
		if err := data(i, cw); err != nil {
			return fmt.Errorf("weights: GGUF: tensor %q: %w", t.Name, err)
		}
		if cw.n != sizes[i] {
			return fmt.Errorf("weights: GGUF: tensor %q: wrote %d bytes, want %d", t.Name, cw.n, sizes[i])
		}
		if _, err := bw.Write(pad(sizes[i])); err != nil {
			return fmt.Errorf("weights: GGUF: write: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("weights: GGUF: write: %w", err)
	}
	return nil
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
