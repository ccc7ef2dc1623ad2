package weights

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzParseSafetensors feeds arbitrary bytes to the header parser. Whatever
// it accepts must be fully usable (every tensor readable as F32) and must
// survive a round trip through the writer unchanged.
func FuzzParseSafetensors(f *testing.F) {
	var buf bytes.Buffer
	t1, _ := NewTensor("w", BF16, []int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	t2, _ := NewTensor("b", F16, []int{3}, []float32{-1, 0, 1})
	t3, _ := NewTensor("s", F32, nil, []float32{7})
	if err := WriteSafetensors(&buf, []Tensor{t1, t2, t3}, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 8))
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8))
	f.Add(rawFile(`{"__metadata__":{"a":"b"},"x":{"dtype":"F16","shape":[0],"data_offsets":[0,0]}}`, 0))
	f.Add(rawFile(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}`, 12))
	f.Add(rawFile(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, 1))
	f.Add(rawFile(`{"__metadata__":{"ggml_type.a":"Q8_0"},"a":{"dtype":"U8","shape":[2,34],"data_offsets":[0,68]}}`, 68))
	f.Add(rawFile(`{"__metadata__":{"ggml_type.a":"Q6_K"},"a":{"dtype":"U8","shape":[1,210],"data_offsets":[0,210]}}`, 210))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseSafetensors("fuzz", data)
		if err != nil {
			return
		}
		var tensors []Tensor
		for _, name := range file.Names() {
			tt, err := file.Tensor(name)
			require.NoError(t, err)
			if tt.DType.IsFloat() || tt.DType.Quantized() {
				vals, err := tt.F32()
				require.NoError(t, err)
				require.Len(t, vals, tt.NumElements())
				if !tt.DType.Quantized() {
					_, err = tt.BF16()
					require.NoError(t, err)
				}
			} else {
				ints, err := tt.Int64s()
				require.NoError(t, err)
				require.Len(t, ints, tt.NumElements())
			}
			tensors = append(tensors, *tt)
		}
		var out bytes.Buffer
		require.NoError(t, WriteSafetensors(&out, tensors, file.Metadata()))
		back, err := ParseSafetensors("rewritten", out.Bytes())
		require.NoError(t, err)
		require.Equal(t, file.Names(), back.Names())
		md := file.Metadata()
		if len(md) == 0 {
			md = nil // the writer omits an empty __metadata__
		}
		require.Equal(t, md, back.Metadata())
		for _, want := range tensors {
			got, err := back.Tensor(want.Name)
			require.NoError(t, err)
			require.Equal(t, want.DType, got.DType)
			require.Equal(t, want.Shape, got.Shape)
			require.True(t, bytes.Equal(want.Data, got.Data))
		}
	})
}

// FuzzParseConfig feeds arbitrary JSON to the config parser. An accepted
// config must validate and survive WriteConfig's encoding unchanged.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(llama31Config))
	f.Add([]byte(cwmConfig))
	f.Add([]byte(`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256}`))
	f.Add([]byte(`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 256,
	  "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
	  "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}, "eos_token_id": [1, 2], "sliding_window": null}`))
	f.Add([]byte(`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256,
	  "layer_types": ["full_attention", "sliding_attention"], "sliding_window": 4, "head_dim": 8, "num_key_value_heads": 2}`))
	f.Add([]byte(`{"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 256,
	  "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0}, "sliding_attention": {"rope_type": "linear", "factor": 2.0}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		require.NoError(t, c.Validate())
		enc, err := json.Marshal(c)
		require.NoError(t, err)
		back, err := ParseConfig(enc)
		require.NoError(t, err, "%s", enc)
		assert.Equal(t, c, back)
	})
}

// FuzzParseIndex checks that an accepted index never names a file outside
// its directory.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../x.safetensors"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseIndex(data)
		if err != nil {
			return
		}
		for _, shard := range m {
			require.NoError(t, checkShardName(shard))
			require.NotContains(t, shard, "/")
			require.NotContains(t, shard, `\`)
			require.NotEqual(t, "..", shard)
		}
	})
}
