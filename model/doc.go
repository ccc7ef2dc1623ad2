// Package model runs LLaMA-architecture decoders (LLaMA 2/3, CWM): RMSNorm,
// rotary position embeddings with optional llama3 frequency scaling,
// grouped-query attention with optional sliding-window layers, SwiGLU, and a
// tied or untied output head.
//
// A Model binds weights from a Hugging Face checkpoint (Load) or builds
// random ones of a preset shape (NewRandom, for benchmarks). BF16 weights
// stay BF16 in memory; activations are float32. Each Session owns a KV cache
// laid out layer × position × kv_dim in blocks of 32 positions; Forward
// runs a whole prompt in batched passes and one token per step when
// decoding. Sessions fork copy-on-write, so a program's source is prefilled
// once and every debugging step continues from it, and they roll back with
// Truncate.
//
// The dense ops go through Backend, a five-method boundary (MatMul,
// RMSNorm, SwiGLU, Attention, Sync) that the CPU implements with package
// kernels and a GPU backend can implement later.
//
// Correctness is checked against PyTorch: testdata/make_reference.py
// transcribes Hugging Face's LlamaForCausalLM/CwmForCausalLM in plain torch
// and records logits for a prefill and 32 greedy decode steps of small random
// checkpoints.
package model
