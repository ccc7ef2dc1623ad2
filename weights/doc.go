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
// owning File or Checkpoint is closed. As with any mapping, a file truncated
// by another process while mapped makes later reads fault; checkpoints are
// expected to be immutable while open.
//
// Writing (WriteSafetensors, WriteCheckpoint, WriteConfig) produces files
// that this package, Hugging Face transformers and the safetensors library
// all read: tests use it to make random checkpoints and training uses it to
// export.
package weights
