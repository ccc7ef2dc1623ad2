// Package cuda runs the inference engine's forward pass on an NVIDIA GPU
// through the CUDA driver API (gorgonia.org/cu), with kernels of its own
// (kernels/cuda/*.cu, compiled to PTX for sm_80 and sm_90 and embedded), so
// no cuBLAS or CUDA runtime library is needed on the target: only the
// driver's libcuda.so.1.
//
// Everything that touches the driver is behind the "cuda" build tag:
// gorgonia.org/cu calls cuInit in its package init and exits the process
// when there is no GPU, so a binary that merely links it cannot start on a
// machine without one. The default build holds only this file and the CPU
// references in ref.go, which the tagged tests compare the kernels against.
//
// GPU implements model.Device: Load uploads a model's weights once, and
// each sequence's KV cache and activations live in device memory, so
// package model's one forward pass (model.Session) runs every op on the
// GPU; only token ids go in and logits come out. Users choose it with
// ndbg.Options.Device or --device cuda (package internal/device).
//
// Build with
//
//	go build -tags cuda ./...
//
// after installing the CUDA headers (cuda.h) and libcuda.so (see README.md).
package cuda
