// Package model runs LLaMA-architecture decoders (LLaMA 2/3, CWM): RMSNorm,
// rotary position embeddings with optional llama3 frequency scaling,
// grouped-query attention with optional sliding-window layers, SwiGLU, and a
// tied or untied output head.
//
// A Model binds weights from a Hugging Face checkpoint (Load) or builds
// random ones of a preset shape (NewRandom, for benchmarks). BF16 weights
// stay BF16 in memory; activations are float32. Each Session owns a KV cache
// in blocks of 32 positions (layer × {K, V} × KV head within a block, a
// head's values position × head_dim, its keys likewise until the block is
// full, then transposed, head_dim × position); Forward runs a whole prompt in batched passes and one
// token per step when decoding. Sessions fork copy-on-write, so a program's
// source is prefilled once and every debugging step continues from it, and
// they roll back with Truncate.
//
// The CPU's KV cache holds keys and values in the weights' dtype: BF16 for
// a BF16 model (each row rounded to nearest even when written, keys after
// RoPE), F32 for an F32 model, which computes exactly as before BF16 caches
// existed. Decode attention reads every cached row each step, so at long
// contexts and many sessions the cache, not the weights, is what a step
// reads; BF16 halves it, as PyTorch (K/V in the model's dtype) and
// llama.cpp (F16 by default) do. The price is BF16 rounding of K and V
// (logits move by NMSE ≈ 5e-6 against the float64 reference fixtures), and
// rows computed by prefill and by decode, a few float32 ulps apart, may
// round to neighbouring BF16 values. There is no option to keep F32 K/V for
// a BF16 model: one cache layout per dtype, and an F32 model for exact work.
//
// DecodeBatch runs one decode step of several sessions (any lengths, forks
// among them) as one pass that reads each weight once for all of them, and
// a Batcher batches the single-token steps of sessions decoding on
// separate goroutines without their coordinating.
//
// The forward pass is written once (forward) as ops on a Pass, a Seq's
// new positions or a Batch's one new position per sequence, and a
// Device runs them: it holds the weights (Device.Load makes them resident),
// each sequence's KV cache and activations, and the kernels. CPU implements
// it with package kernels (the KV cache above); package cuda, under the
// cuda build tag, implements it on a GPU with the weights, the cache and
// the activations in device memory. The conformance suite in
// model/modeltest runs the same cases on every device.
//
// Correctness is checked against PyTorch: testdata/make_reference.py
// transcribes Hugging Face's LlamaForCausalLM/CwmForCausalLM in plain torch
// and records logits for a prefill and 32 greedy decode steps of small random
// checkpoints.
package model
