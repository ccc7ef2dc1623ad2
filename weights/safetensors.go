package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MaxHeaderSize bounds the JSON header of a safetensors file (the same limit
// as the reference Rust implementation), so a hostile length cannot make the
// parser allocate or scan gigabytes.
const MaxHeaderSize = 100_000_000

// maxDims bounds the rank of a tensor; LLaMA tensors have at most 2.
const maxDims = 8

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// entry is one validated tensor record of a safetensors header.
type entry struct {
	name       string
	dtype      DType
	shape      []int
	begin, end int // byte offsets into the data region
}

// header is the validated content of a safetensors header.
type header struct {
	entries  []entry // in header order
	metadata map[string]string
	dataOff  int // offset of the data region in the file
}

// parseSafetensors validates a complete safetensors file held in data and
// returns its header. It checks every field: the header length, the JSON
// syntax (no duplicate keys, no unknown fields), the dtypes, that shape times
// element size equals each tensor's byte length, and that the tensors exactly
// tile the data region without gaps or overlaps (as the reference
// implementation requires).
func parseSafetensors(data []byte) (*header, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data[:8])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", n, MaxHeaderSize)
	}
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes after the length field", n, len(data)-8)
	}
	hdr := data[8 : 8+n]
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, errors.New("header does not start with '{'")
	}
	h := &header{dataOff: 8 + int(n)}
	if err := h.parseJSON(hdr); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if err := h.checkLayout(len(data) - h.dataOff); err != nil {
		return nil, err
	}
	if err := h.markQuantized(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	return h, nil
}

// QuantizedKeyPrefix marks, in a safetensors file's __metadata__, a tensor
// of llama.cpp's block-quantized rows, which safetensors has no dtype for:
// "ggml_type.NAME": "Q4_K" says that tensor NAME, stored as U8 of shape
// [..., row bytes], is Q4_K of shape [..., row bytes / block bytes × block
// length] (the bytes are llama.cpp's blocks, as in a GGUF file). Any
// safetensors reader reads such a file (the rows as bytes); this package
// reads the tensor as its quantized type.
const QuantizedKeyPrefix = "ggml_type."

// quantizedDType is the block-quantized DType named s ("Q8_0", "Q4_K", ...).
func quantizedDType(s string) (DType, bool) {
	for d := Q8_0; d <= Q6_K; d++ {
		if d.String() == s {
			return d, true
		}
	}
	return 0, false
}

// markQuantized gives the tensors the metadata marks (QuantizedKeyPrefix)
// their quantized type and logical shape, checking that each is a U8
// tensor of whole blocks.
func (h *header) markQuantized() error {
	for key, val := range h.metadata {
		name, ok := strings.CutPrefix(key, QuantizedKeyPrefix)
		if !ok {
			continue
		}
		i := slices.IndexFunc(h.entries, func(e entry) bool { return e.name == name })
		if i < 0 {
			return fmt.Errorf("%s %q names no tensor", metadataKey, truncate(key, 64))
		}
		e := &h.entries[i]
		dt, ok := quantizedDType(val)
		if !ok {
			return fmt.Errorf("tensor %q: %s %q: not a quantized type (Q8_0, Q4_0, Q5_0, Q4_K, Q6_K)", truncate(name, 64), metadataKey, truncate(val, 16))
		}
		k, _ := dt.Kernels()
		if e.dtype != U8 || len(e.shape) == 0 || e.shape[len(e.shape)-1] == 0 || e.shape[len(e.shape)-1]%k.BlockBytes() != 0 {
			return fmt.Errorf("tensor %q: marked %s, but it is %s of shape %v, not U8 rows of whole %d-byte blocks", truncate(name, 64), val, e.dtype, e.shape, k.BlockBytes())
		}
		e.dtype = dt
		e.shape[len(e.shape)-1] = e.shape[len(e.shape)-1] / k.BlockBytes() * k.BlockLen()
	}
	return nil
}

// parseJSON decodes the header object token by token so that duplicate keys,
// unknown fields and non-integer numbers are rejected rather than silently
// accepted as encoding/json would.
func (h *header) parseJSON(hdr []byte) error {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	dec.UseNumber()
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return err
		}
		if seen[key] {
			return fmt.Errorf("duplicate key %q", truncate(key, 64))
		}
		seen[key] = true
		if key == metadataKey {
			if h.metadata, err = parseMetadata(dec); err != nil {
				return fmt.Errorf("%s: %w", metadataKey, err)
			}
			continue
		}
		if key == "" {
			return errors.New("empty tensor name")
		}
		e, err := parseEntry(dec)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", truncate(key, 64), err)
		}
		e.name = key
		h.entries = append(h.entries, e)
	}
	if err := expectDelim(dec, '}'); err != nil {
		return err
	}
	// Only whitespace (the usual alignment padding) may follow the object.
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return errors.New("data after the header object")
		}
		return err
	}
	return nil
}

func parseMetadata(dec *json.Decoder) (map[string]string, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	md := map[string]string{}
	for dec.More() {
		k, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		if _, dup := md[k]; dup {
			return nil, fmt.Errorf("duplicate key %q", truncate(k, 64))
		}
		v, err := stringToken(dec)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", truncate(k, 64), err)
		}
		md[k] = v
	}
	return md, expectDelim(dec, '}')
}

func parseEntry(dec *json.Decoder) (entry, error) {
	var e entry
	if err := expectDelim(dec, '{'); err != nil {
		return e, err
	}
	var haveDType, haveShape, haveOffsets bool
	for dec.More() {
		k, err := stringToken(dec)
		if err != nil {
			return e, err
		}
		switch k {
		case "dtype":
			if haveDType {
				return e, errors.New("duplicate key \"dtype\"")
			}
			haveDType = true
			s, err := stringToken(dec)
			if err != nil {
				return e, fmt.Errorf("dtype: %w", err)
			}
			if e.dtype, err = ParseDType(s); err != nil {
				return e, err
			}
		case "shape":
			if haveShape {
				return e, errors.New("duplicate key \"shape\"")
			}
			haveShape = true
			dims, err := intArray(dec, maxDims)
			if err != nil {
				return e, fmt.Errorf("shape: %w", err)
			}
			e.shape = dims
		case "data_offsets":
			if haveOffsets {
				return e, errors.New("duplicate key \"data_offsets\"")
			}
			haveOffsets = true
			offs, err := intArray(dec, 2)
			if err != nil {
				return e, fmt.Errorf("data_offsets: %w", err)
			}
			if len(offs) != 2 {
				return e, fmt.Errorf("data_offsets has %d values, want 2", len(offs))
			}
			e.begin, e.end = offs[0], offs[1]
		default:
			return e, fmt.Errorf("unknown field %q", truncate(k, 64))
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return e, err
	}
	switch {
	case !haveDType:
		return e, errors.New("missing dtype")
	case !haveShape:
		return e, errors.New("missing shape")
	case !haveOffsets:
		return e, errors.New("missing data_offsets")
	}
	if e.begin > e.end {
		return e, fmt.Errorf("data_offsets begin %d > end %d", e.begin, e.end)
	}
	n, ok := numElements(e.shape)
	if !ok || n > math.MaxInt/e.dtype.Size() {
		return e, fmt.Errorf("shape %v overflows", e.shape)
	}
	if want := n * e.dtype.Size(); want != e.end-e.begin {
		return e, fmt.Errorf("shape %v of %s needs %d bytes, data_offsets [%d, %d] hold %d",
			e.shape, e.dtype, want, e.begin, e.end, e.end-e.begin)
	}
	return e, nil
}

// checkLayout verifies that the tensors exactly tile a data region of size
// bytes: each inside it, none overlapping, no gaps and nothing left over.
func (h *header) checkLayout(size int) error {
	idx := make([]int, len(h.entries))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ea, eb := &h.entries[idx[a]], &h.entries[idx[b]]
		if ea.begin != eb.begin {
			return ea.begin < eb.begin
		}
		return ea.end < eb.end
	})
	pos := 0
	prev := ""
	for _, i := range idx {
		e := &h.entries[i]
		if e.end > size {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] outside the %d-byte data region",
				truncate(e.name, 64), e.begin, e.end, size)
		}
		if e.begin < pos {
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap tensor %q ending at %d",
				truncate(e.name, 64), e.begin, e.end, truncate(prev, 64), pos)
		}
		if e.begin > pos {
			return fmt.Errorf("tensor %q: gap of %d bytes before data_offsets [%d, %d]",
				truncate(e.name, 64), e.begin-pos, e.begin, e.end)
		}
		pos, prev = e.end, e.name
	}
	if pos != size {
		return fmt.Errorf("tensors cover %d bytes of the %d-byte data region", pos, size)
	}
	return nil
}

// numElements multiplies the dims, reporting false on overflow.
func numElements(shape []int) (int, bool) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, got %v", want, describe(tok))
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("invalid JSON: %w", err)
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected a string, got %v", describe(tok))
	}
	return s, nil
}

// intArray reads a JSON array of at most max non-negative integers.
func intArray(dec *json.Decoder, max int) ([]int, error) {
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	out := []int{}
	for dec.More() {
		if len(out) == max {
			return nil, fmt.Errorf("more than %d values", max)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("expected an integer, got %v", describe(tok))
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || v < 0 || v > math.MaxInt {
			return nil, fmt.Errorf("%q is not a non-negative integer", truncate(string(num), 32))
		}
		out = append(out, int(v))
	}
	return out, expectDelim(dec, ']')
}

// describe renders a JSON token for an error message without echoing an
// unbounded amount of untrusted text.
func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return strconv.Quote(t.String())
	case string:
		return strconv.Quote(truncate(t, 32))
	case json.Number:
		return truncate(string(t), 32)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
