#!/bin/sh
# Rebuilds the embedded PTX from the .cu sources (run by `go generate`):
# one PTX file per source and architecture, NAME.sm_80.ptx and
# NAME.sm_90.ptx. PTX is forward compatible: the driver JIT-compiles it for
# the GPU at hand, so a newer driver (CUDA 12/13) runs PTX built by nvcc 11.8.
# The outputs are committed, so building the Go code needs no nvcc.
set -eu
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
for src in gemv gemm vector attention sample forward; do
	for arch in 80 90; do
		"$NVCC" -ptx -O3 -std=c++17 -arch=sm_$arch -o "$src.sm_$arch.ptx" "$src.cu"
		# Check that it assembles (and report spills) before committing it.
		"${PTXAS:-ptxas}" -arch=sm_$arch "$src.sm_$arch.ptx" -o /dev/null
	done
done
