#!/bin/sh
# Builds, on a machine with Go and the CUDA headers (not the GPU machine),
# the binaries that run_on_gpu.sh runs there (the cuda tests, cuda-bench,
# and ndbg-infer with the CUDA device compiled in), into .cudabin/ at the
# repository root (kept out of git through .git/info/exclude), and checks
# they fit in what a device call carries (64 MiB).
set -eu
cd "$(dirname "$0")/../.."
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.cudabin/' "$exclude" 2>/dev/null || echo '/.cudabin/' >>"$exclude"
mkdir -p .cudabin
go test -tags cuda -c -o .cudabin/cuda.test ./cuda/
go build -tags cuda -o .cudabin/cuda-bench ./bench/cuda
go build -tags cuda -o .cudabin/ndbg-infer ./cmd/ndbg-infer
git rev-parse HEAD >.cudabin/commit
size=$(du -sk .cudabin | cut -f1)
echo "built .cudabin/ (${size} KiB) at $(cat .cudabin/commit)"
[ "$size" -lt 60000 ] || { echo "too large to carry" >&2; exit 1; }
