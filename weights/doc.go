// Package weights reads and writes model checkpoints in the Hugging Face
// layout: a config.json with LlamaConfig fields and tensors in safetensors
// files (one model.safetensors, or shards listed by
// model.safetensors.index.json).
//
// Files are memory-mapped read-only and every header field is validated
// before use, so a checkpoint is never trusted: offsets, shapes, dtypes and
// shard names are all checked, and nothing in a file is executed. Tensor data
// is returned zero-copy where the dtype and alignment allow; such slices alias
// the read-only mapping, must not be written to, and are valid only until the
// owning File or Checkpoint is closed.
package weights
