package weights

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawFile assembles a safetensors file from a literal header and data.
func rawFile(header string, dataLen int) []byte {
	b := make([]byte, 8, 8+len(header)+dataLen)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, dataLen)...)
}

func TestParseAcceptsValid(t *testing.T) {
	for name, tc := range map[string]struct {
		header  string
		dataLen int
	}{
		"padding":          {`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   `, 8},
		"metadata":         {`{"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[1,2],"data_offsets":[0,4]}}`, 4},
		"order by offset":  {`{"b":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]},"a":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, 4},
		"empty tensors":    {`{"z":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`, 4},
		"no tensors":       {`{}`, 0},
		"field order free": {`{"a":{"data_offsets":[0,2],"shape":[1],"dtype":"F16"}}`, 2},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSafetensors("x.safetensors", rawFile(tc.header, tc.dataLen))
			require.NoError(t, err)
		})
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	valid := rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8)
	hugeLen := append([]byte(nil), valid...)
	binary.LittleEndian.PutUint64(hugeLen, 1<<62)
	overLimit := append([]byte(nil), valid...)
	binary.LittleEndian.PutUint64(overLimit, MaxHeaderSize+1)
	pastEnd := append([]byte(nil), valid...)
	binary.LittleEndian.PutUint64(pastEnd, uint64(len(valid)))

	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte header length"},
		{"truncated length", valid[:5], "shorter than the 8-byte"},
		{"truncated data", valid[:len(valid)-1], "outside the 7-byte data region"},
		{"trailing data", append(append([]byte(nil), valid...), 0), "cover 8 bytes of the 9-byte data region"},
		{"huge header length", hugeLen, "exceeds the limit"},
		{"header length over limit", overLimit, "exceeds the limit"},
		{"header past end", pastEnd, "exceeds the"},
		{"empty header", rawFile(``, 0), "does not start with '{'"},
		{"not an object", rawFile(`[1]`, 0), "does not start with '{'"},
		{"bad JSON", rawFile(`{"a":{"dtype":"F32",`, 0), "invalid JSON"},
		{"bad JSON value", rawFile(`{"a":{"dtype":F32}}`, 0), "invalid JSON"},
		{"trailing JSON", rawFile(`{}{}`, 0), "data after the header object"},
		{"duplicate tensor", rawFile(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"a":{"dtype":"F16","shape":[1],"data_offsets":[2,4]}}`, 4), `duplicate key "a"`},
		{"duplicate field", rawFile(`{"a":{"dtype":"F16","dtype":"F16","shape":[1],"data_offsets":[0,2]}}`, 2), `duplicate key "dtype"`},
		{"unknown field", rawFile(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2],"x":1}}`, 2), `unknown field "x"`},
		{"missing dtype", rawFile(`{"a":{"shape":[1],"data_offsets":[0,2]}}`, 2), "missing dtype"},
		{"missing shape", rawFile(`{"a":{"dtype":"F16","data_offsets":[0,2]}}`, 2), "missing shape"},
		{"missing offsets", rawFile(`{"a":{"dtype":"F16","shape":[1]}}`, 2), "missing data_offsets"},
		{"unsupported dtype", rawFile(`{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}`, 8), `unsupported dtype "F64"`},
		{"unsupported int dtype", rawFile(`{"a":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}`, 2), `unsupported dtype "U16"`},
		{"unknown dtype", rawFile(`{"a":{"dtype":"Q4_K","shape":[1],"data_offsets":[0,8]}}`, 8), `unknown dtype "Q4_K"`},
		{"dtype not a string", rawFile(`{"a":{"dtype":4,"shape":[1],"data_offsets":[0,8]}}`, 8), "expected a string"},
		{"shape mismatch", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), "needs 12 bytes"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, 8), "not a non-negative integer"},
		{"fractional dim", rawFile(`{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}`, 8), "not a non-negative integer"},
		{"dim overflow", rawFile(`{"a":{"dtype":"F32","shape":[65536,65536,65536,65536],"data_offsets":[0,8]}}`, 8), "overflows"},
		{"dim too large", rawFile(`{"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}}`, 8), "not a non-negative integer"},
		{"too many dims", rawFile(`{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}}`, 4), "more than 8 values"},
		{"shape not array", rawFile(`{"a":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}`, 8), `expected "["`},
		{"three offsets", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}`, 8), "more than 2 values"},
		{"one offset", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, 8), "has 1 values, want 2"},
		{"begin after end", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, 8), "begin 8 > end 0"},
		{"out of range", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}}`, 8), "outside the 8-byte data region"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlap"},
		{"same range twice", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8), "overlap"},
		{"gap", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "gap of 4 bytes"},
		{"empty name", rawFile(`{"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "empty tensor name"},
		{"metadata not strings", rawFile(`{"__metadata__":{"a":1}}`, 0), "__metadata__: key \"a\": expected a string"},
		{"metadata duplicate", rawFile(`{"__metadata__":{"a":"1","a":"2"}}`, 0), `duplicate key "a"`},
		{"metadata twice", rawFile(`{"__metadata__":{},"__metadata__":{}}`, 0), `duplicate key "__metadata__"`},
		{"entry not object", rawFile(`{"a":[1]}`, 0), `tensor "a": expected "{"`},
		{"quantized mark names no tensor", rawFile(`{"__metadata__":{"ggml_type.b":"Q8_0"},"a":{"dtype":"U8","shape":[1,34],"data_offsets":[0,34]}}`, 34), `"ggml_type.b" names no tensor`},
		{"quantized mark on F32", rawFile(`{"__metadata__":{"ggml_type.a":"Q8_0"},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, 4), "not U8 rows of whole 34-byte blocks"},
		{"quantized mark of partial blocks", rawFile(`{"__metadata__":{"ggml_type.a":"Q8_0"},"a":{"dtype":"U8","shape":[2,33],"data_offsets":[0,66]}}`, 66), "not U8 rows of whole 34-byte blocks"},
		{"quantized mark of no bytes", rawFile(`{"__metadata__":{"ggml_type.a":"Q8_0"},"a":{"dtype":"U8","shape":[2,0],"data_offsets":[0,0]}}`, 0), "not U8 rows of whole 34-byte blocks"},
		{"quantized mark of a scalar", rawFile(`{"__metadata__":{"ggml_type.a":"Q8_0"},"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`, 1), "not U8 rows of whole 34-byte blocks"},
		{"quantized mark of an unknown type", rawFile(`{"__metadata__":{"ggml_type.a":"Q3_K"},"a":{"dtype":"U8","shape":[1,34],"data_offsets":[0,34]}}`, 34), `"Q3_K": not a quantized type`},
		{"quantized mark of a float type", rawFile(`{"__metadata__":{"ggml_type.a":"F32"},"a":{"dtype":"U8","shape":[1,4],"data_offsets":[0,4]}}`, 4), `"F32": not a quantized type`},
		{"null entry", rawFile(`{"a":null}`, 0), `got null`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSafetensors("bad.safetensors", tc.file)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "bad.safetensors", "errors name the file")
		})
	}
}

func TestOpenFileErrorsNameFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "broken.safetensors")
	require.NoError(t, os.WriteFile(path, rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8), 0o644))
	_, err := OpenFile(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), `tensor "a"`)
	empty := filepath.Join(dir, "empty.safetensors")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = OpenFile(empty)
	assert.ErrorContains(t, err, "shorter than")
	_, err = OpenFile(dir)
	assert.ErrorContains(t, err, "not a regular file")
}

func TestWriterRejectsBadTensors(t *testing.T) {
	good := Tensor{Name: "a", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}
	for name, tc := range map[string]struct {
		tensors []Tensor
		want    string
	}{
		"duplicate":     {[]Tensor{good, good}, `duplicate tensor name "a"`},
		"empty name":    {[]Tensor{{DType: F32, Shape: []int{1}, Data: make([]byte, 4)}}, "invalid name"},
		"metadata name": {[]Tensor{{Name: "__metadata__", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}}, "invalid name"},
		"bad dtype":     {[]Tensor{{Name: "a", Shape: []int{1}, Data: make([]byte, 4)}}, "invalid dtype"},
		"short data":    {[]Tensor{{Name: "a", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}, "needs 8 bytes, have 4"},
		"negative dim":  {[]Tensor{{Name: "a", DType: F32, Shape: []int{-1}}}, "invalid shape"},
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteSafetensors(&buf, tc.tensors, nil)
			assert.ErrorContains(t, err, tc.want)
			assert.Zero(t, buf.Len(), "nothing written on error")
		})
	}
}

func TestHeaderIsAligned(t *testing.T) {
	for n := 1; n < 12; n++ {
		var buf bytes.Buffer
		name := strings.Repeat("x", n)
		require.NoError(t, WriteSafetensors(&buf, []Tensor{{Name: name, DType: BF16, Shape: []int{1}, Data: []byte{1, 2}}}, nil))
		hl := binary.LittleEndian.Uint64(buf.Bytes())
		assert.Zero(t, (8+hl)%8, "data region of %q starts 8-byte aligned", name)
	}
}

func TestIndexValidation(t *testing.T) {
	for name, tc := range map[string]struct{ index, want string }{
		"traversal":      {`{"weight_map":{"a":"../x.safetensors"}}`, "not a plain file name"},
		"subdir":         {`{"weight_map":{"a":"sub/x.safetensors"}}`, "not a plain file name"},
		"absolute":       {`{"weight_map":{"a":"/etc/x.safetensors"}}`, "not a plain file name"},
		"backslash":      {`{"weight_map":{"a":"..\\x.safetensors"}}`, "not a plain file name"},
		"hidden":         {`{"weight_map":{"a":".x.safetensors"}}`, "not a plain file name"},
		"dotdot":         {`{"weight_map":{"a":".."}}`, "not a plain file name"},
		"wrong suffix":   {`{"weight_map":{"a":"config.json"}}`, "does not end in .safetensors"},
		"empty shard":    {`{"weight_map":{"a":""}}`, "shard name of length 0"},
		"empty map":      {`{"weight_map":{}}`, "missing or empty"},
		"no map":         {`{"metadata":{}}`, "missing or empty"},
		"bad json":       {`{"weight_map":`, "invalid JSON"},
		"not strings":    {`{"weight_map":{"a":1}}`, "invalid JSON"},
		"trailing":       {`{"weight_map":{"a":"m.safetensors"}} x`, "data after"},
		"empty tensor":   {`{"weight_map":{"":"m.safetensors"}}`, "empty tensor name"},
		"nul in name":    {`{"weight_map":{"a":"m\u0000.safetensors"}}`, "not a plain file name"},
		"colon (drive)":  {`{"weight_map":{"a":"C:m.safetensors"}}`, "not a plain file name"},
		"overlong shard": {`{"weight_map":{"a":"` + strings.Repeat("m", 300) + `.safetensors"}}`, "shard name of length"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseIndex([]byte(tc.index))
			assert.ErrorContains(t, err, tc.want)
		})
	}
	m, err := ParseIndex([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors"}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "model-00001-of-00002.safetensors"}, m)
}

func TestShardedConsistency(t *testing.T) {
	write := func(t *testing.T, dir, index string, shards map[string][]Tensor) {
		t.Helper()
		for name, ts := range shards {
			require.NoError(t, WriteSafetensorsFile(filepath.Join(dir, name), ts, nil))
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFileName), []byte(index), 0o644))
	}
	// open opens dir's tensors from the directory and as a file system
	// (OpenFS's path): both pass the same checks, or fail with errors that
	// contain each of want.
	open := func(t *testing.T, dir string, want ...string) {
		t.Helper()
		ck, err := OpenTensors(dir)
		fck, ferr := openTensors(fsSource(os.DirFS(dir), dir))
		if len(want) == 0 {
			require.NoError(t, err)
			require.NoError(t, ferr)
			require.Equal(t, ck.Names(), fck.Names())
			ck.Close()
			fck.Close()
			return
		}
		for _, w := range want {
			assert.ErrorContains(t, err, w, "directory")
			assert.ErrorContains(t, ferr, w, "file system")
		}
	}
	a := Tensor{Name: "a", DType: F16, Shape: []int{1}, Data: []byte{0, 0x3c}}
	b := Tensor{Name: "b", DType: F16, Shape: []int{1}, Data: []byte{0, 0x40}}
	t.Run("listed tensor missing", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors","b":"s1.safetensors"}}`, map[string][]Tensor{"s1.safetensors": {a}})
		open(t, dir, `tensor "b" is mapped to s1.safetensors, which does not hold it`)
	})
	t.Run("unlisted tensor", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors"}}`, map[string][]Tensor{"s1.safetensors": {a, b}})
		open(t, dir, `tensor "b" is not mapped to this shard`)
	})
	t.Run("same tensor in two shards", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`,
			map[string][]Tensor{"s1.safetensors": {a}, "s2.safetensors": {a, b}})
		open(t, dir, `tensor "a" is not mapped to this shard`)
	})
	t.Run("missing shard file", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`, map[string][]Tensor{"s1.safetensors": {a}})
		open(t, dir, "s2.safetensors")
	})
	t.Run("broken shard named in error", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors"}}`, nil)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.safetensors"), rawFile(`{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,2]}}`, 2), 0o644))
		open(t, dir, "s1.safetensors", `tensor "a"`)
	})
	t.Run("valid", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, `{"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}}`,
			map[string][]Tensor{"s1.safetensors": {a}, "s2.safetensors": {b}})
		open(t, dir)
		ck, err := OpenFS(os.DirFS(dir), "valid")
		require.ErrorContains(t, err, "config.json", "OpenFS wants a config")
		require.Nil(t, ck)
		ck, err = OpenTensors(dir)
		require.NoError(t, err)
		defer ck.Close()
		bt, err := ck.Require("b", 1)
		require.NoError(t, err)
		v, err := bt.F32()
		require.NoError(t, err)
		assert.Equal(t, []float32{2}, v)
	})
}

// TestOpenRefusesContradictions: checkpoints whose files each pass every
// check but contradict config.json, and loaded as garbage: an F16 label on
// BF16 bytes (the same size) against torch_dtype or beside BF16 tensors,
// and an lm_head that tie_word_embeddings would ignore. A copy of the
// embedding as lm_head, and labels that agree, open. The directory and the
// file system say the same.
func TestOpenRefusesContradictions(t *testing.T) {
	write := func(t *testing.T, edit func(c *Config, ts []Tensor) []Tensor) string {
		dir := t.TempDir()
		c := tinyConfig()
		ts, err := RandomLlama(c, BF16, 1)
		require.NoError(t, err)
		ts = edit(c, ts)
		require.NoError(t, WriteCheckpoint(dir, c, ts, 0, nil))
		return dir
	}
	open := func(t *testing.T, dir string) (error, error) {
		ck, err := Open(dir)
		if err == nil {
			ck.Close()
		}
		fck, ferr := OpenFS(os.DirFS(dir), dir)
		if ferr == nil {
			fck.Close()
		}
		return err, ferr
	}
	relabel := func(name string) func(c *Config, ts []Tensor) []Tensor {
		return func(c *Config, ts []Tensor) []Tensor {
			for i := range ts {
				if name == "" || ts[i].Name == name {
					ts[i].DType = F16
				}
			}
			return ts
		}
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config, ts []Tensor) []Tensor
		want string // "" opens
	}{
		{"agreeing labels", func(c *Config, ts []Tensor) []Tensor { c.TorchDType = "bfloat16"; return ts }, ""},
		{"no torch_dtype", func(c *Config, ts []Tensor) []Tensor { c.TorchDType = ""; return ts }, ""},
		{"float32 torch_dtype, BF16 tensors", func(c *Config, ts []Tensor) []Tensor { c.TorchDType = "float32"; return ts }, ""},
		{"one F16 among BF16", relabel(LayerTensor(1, DownProj)), `"model.layers.1.mlp.down_proj.weight" is F16 but`},
		{"all F16, torch_dtype bfloat16", func(c *Config, ts []Tensor) []Tensor {
			c.TorchDType = "bfloat16"
			return relabel("")(c, ts)
		}, `is labelled F16, but config.json's torch_dtype is "bfloat16"`},
		{"all BF16, torch_dtype float16", func(c *Config, ts []Tensor) []Tensor { c.TorchDType = "float16"; return ts }, `is labelled BF16, but config.json's torch_dtype is "float16"`},
		{"stray lm_head", func(c *Config, ts []Tensor) []Tensor { c.TieWordEmbeddings = true; return ts }, "also holds a different lm_head.weight"},
		{"lm_head a copy of the embedding", func(c *Config, ts []Tensor) []Tensor {
			c.TieWordEmbeddings = true
			var embed []byte
			for _, t := range ts {
				if t.Name == EmbedTokens {
					embed = t.Data
				}
			}
			for i := range ts {
				if ts[i].Name == LMHead {
					ts[i].Data = append([]byte(nil), embed...)
				}
			}
			return ts
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := write(t, tc.edit)
			err, ferr := open(t, dir)
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, ferr)
				return
			}
			assert.ErrorContains(t, err, tc.want, "directory")
			assert.ErrorContains(t, ferr, tc.want, "file system")
		})
	}
}

// TestQuantizedSafetensors: a block-quantized tensor written to safetensors
// is, for any reader of the format (here a plain JSON parse of the header,
// as the format's own definition reads it), U8 rows of llama.cpp's blocks
// with its type in the metadata; this package reads it back as the
// quantized tensor, the same bytes. Unquantized U8 stays U8, and metadata
// that contradicts the tensors is refused before anything is written.
func TestQuantizedSafetensors(t *testing.T) {
	q := Tensor{Name: "w", DType: Q4_K, Shape: []int{3, 512}, Data: make([]byte, 3*2*144)}
	for i := range q.Data {
		q.Data[i] = byte(i * 7)
	}
	raw := Tensor{Name: "u", DType: U8, Shape: []int{5}, Data: []byte{1, 2, 3, 4, 5}}
	f32 := Tensor{Name: "n", DType: F32, Shape: []int{2}, Data: make([]byte, 8)}
	var buf bytes.Buffer
	require.NoError(t, WriteSafetensors(&buf, []Tensor{q, raw, f32}, map[string]string{"format": "pt"}))

	data := buf.Bytes()
	n := binary.LittleEndian.Uint64(data[:8])
	var hdr map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data[8:8+n], &hdr))
	var md map[string]string
	require.NoError(t, json.Unmarshal(hdr["__metadata__"], &md))
	require.Equal(t, map[string]string{"format": "pt", "ggml_type.w": "Q4_K"}, md)
	var w struct {
		DType   string `json:"dtype"`
		Shape   []int  `json:"shape"`
		Offsets []int  `json:"data_offsets"`
	}
	require.NoError(t, json.Unmarshal(hdr["w"], &w))
	require.Equal(t, "U8", w.DType)
	require.Equal(t, []int{3, 288}, w.Shape) // two 144-byte Q4_K blocks a row
	require.Equal(t, q.Data, data[8+int(n)+w.Offsets[0]:8+int(n)+w.Offsets[1]])

	f, err := ParseSafetensors("q.safetensors", data)
	require.NoError(t, err)
	got, err := f.Tensor("w")
	require.NoError(t, err)
	require.Equal(t, Q4_K, got.DType)
	require.Equal(t, []int{3, 512}, got.Shape)
	require.Equal(t, q.Data, got.Data)
	u, err := f.Tensor("u")
	require.NoError(t, err)
	require.Equal(t, U8, u.DType)
	require.Equal(t, raw.Data, u.Data)

	// Written back as read (the mark is already there): the same file.
	var again bytes.Buffer
	require.NoError(t, WriteSafetensors(&again, []Tensor{*got, *u, f32}, f.Metadata()))
	require.Equal(t, data, again.Bytes())

	for name, md := range map[string]map[string]string{
		"another type":           {"ggml_type.w": "Q8_0"},
		"a tensor not quantized": {"ggml_type.n": "Q8_0"},
		"no tensor":              {"ggml_type.x": "Q4_K"},
	} {
		err := WriteSafetensors(io.Discard, []Tensor{q, f32}, md)
		require.Error(t, err, name)
	}
}
