#!/bin/bash
# Runs the CUDA checks and benchmarks on the GPU machine, which has no Go:
# the binaries are built beforehand on a machine with Go and the CUDA
# headers (see cuda/README.md) and carried in .cudabin/:
#
#   .cudabin/cuda.test    go test -tags cuda -c -o .cudabin/cuda.test ./cuda/
#   .cudabin/cuda-bench   go build -tags cuda -o .cudabin/cuda-bench ./bench/cuda
#   .cudabin/ndbg-infer   go build -tags cuda -o .cudabin/ndbg-infer ./cmd/ndbg-infer
#
# (sh bench/cuda/build.sh builds all three.)
# One device command may run 10 minutes, so the work is split in stages,
# each meant for its own call:
#
#   bash bench/cuda/run_on_gpu.sh test     kernel conformance and checks, then model's device
#                                          conformance suite (modeltest) on the GPU      (~1 min)
#   bash bench/cuda/run_on_gpu.sh infer    ndbg-infer --device cuda against --device cpu:
#                                          the default model's prediction and generated tokens
#   bash bench/cuda/run_on_gpu.sh bench    kernel + end-to-end benchmarks, 1.8b and 32b (~3-5 min)
#   bash bench/cuda/run_on_gpu.sh torch    PyTorch eager and compiled, same presets     (~5-8 min)
#   bash bench/cuda/run_on_gpu.sh quick    test and infer, then bench and torch eager on 1.8b only
#
# Results land in $OUT: env.log, test.log, infer.log, bench.log, bench.json,
# torch.log, torch.json. TEST_TIMEOUT and BENCH_TIMEOUT (seconds) cap the
# test and bench stages, and BENCH_FLAGS adds cuda-bench flags (e.g.
# -kernels-only): train/gpu/run.sh runs test and bench in its first 100 s.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BIN=${BIN:-.cudabin}
STAGE=${1:-quick}
MODELS=${MODELS:-1.8b,32b}
{
	date -u
	nvidia-smi || echo "nvidia-smi failed: no GPU driver?"
	ldconfig -p | grep -E 'libcuda\.so' || echo "no libcuda.so in ldconfig"
	# The driver entry points the binaries call (resolved lazily, so a
	# missing one would fail only when first called): report any absent.
	python3 - <<'PY'
import ctypes
lib = ctypes.CDLL("libcuda.so.1")
need = """cuInit cuDriverGetVersion cuDeviceGetCount cuDeviceGet cuDeviceGetName cuDeviceGetAttribute
cuCtxCreate_v2 cuCtxSetCurrent cuCtxSynchronize cuCtxDestroy_v2 cuModuleLoadData cuModuleGetFunction
cuModuleUnload cuMemAlloc_v2 cuMemFree_v2 cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuMemcpyDtoD_v2 cuMemsetD8_v2
cuMemGetInfo_v2 cuLaunchKernel""".split()
missing = [n for n in need if not hasattr(lib, n)]
v = ctypes.c_int()
lib.cuDriverGetVersion(ctypes.byref(v))
print("driver API version", v.value, "missing entry points:", missing or "none")
PY
} >"$OUT/env.log" 2>&1
cat "$OUT/env.log"
if ! nvidia-smi >/dev/null 2>&1 && [ ! -e /dev/nvidia0 ]; then
	echo "no GPU here: gorgonia.org/cu would exit at start-up; stopping" | tee -a "$OUT/env.log"
	exit 1
fi
rc=0

stage_test() {
	local t=${TEST_TIMEOUT:-280}
	timeout "$t" "$BIN/cuda.test" -test.v -test.timeout "$((t > 20 ? t - 10 : t))s" >"$OUT/test.log" 2>&1 || rc=1
	grep -E '^(--- |FAIL|PASS|ok)|NMSE|panic|Error' "$OUT/test.log" | tail -80
}

# stage_infer runs the command a user runs, on both devices: the same
# greedy prediction of the default model, and the same generated tokens.
stage_infer() {
	{
		for dev in cpu cuda; do
			echo "== predict --device $dev"
			"$BIN/ndbg-infer" --device "$dev" --unsandboxed --program examples/mean.py --call 'f([3, None, 4])' \
				--actions 'step_into step_over' --action step_over >"$OUT/predict.$dev.json" || rc=1
			cat "$OUT/predict.$dev.json"
			echo "== generate --device $dev"
			"$BIN/ndbg-infer" generate --device "$dev" --model weights/default --tokens 1,2,3 --max-tokens 16 \
				>"$OUT/generate.$dev.txt" || rc=1
			cat "$OUT/generate.$dev.txt"
		done
		cmp "$OUT/predict.cpu.json" "$OUT/predict.cuda.json" && echo "predictions: same on cpu and cuda" || { echo "predictions differ"; rc=1; }
		cmp "$OUT/generate.cpu.txt" "$OUT/generate.cuda.txt" && echo "generated tokens: same on cpu and cuda" || { echo "generated tokens differ"; rc=1; }
	} >"$OUT/infer.log" 2>&1
	cat "$OUT/infer.log"
}

stage_bench() {
	# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
	timeout "${1:-560}" "$BIN/cuda-bench" -models "$2" -prefill 512 -decode 32 -json "$OUT/bench.json" ${BENCH_FLAGS:-} \
		>"$OUT/bench.log" 2>&1 || rc=1
	cat "$OUT/bench.log"
}

stage_torch() {
	PYTHONUNBUFFERED=1 timeout "${1:-560}" python3 bench/cuda/torch_bench.py --models "$2" --modes "$3" \
		--prefill 512 --decode 32 --json "$OUT/torch.json" >"$OUT/torch.log" 2>&1 || rc=1
	tail -30 "$OUT/torch.log"
}

case "$STAGE" in
test) stage_test ;;
infer) stage_infer ;;
bench) stage_bench "${BENCH_TIMEOUT:-560}" "$MODELS" ;;
torch) stage_torch 560 "$MODELS" eager,compiled ;;
quick)
	stage_test
	stage_infer
	stage_bench 150 1.8b
	stage_torch 150 1.8b eager
	;;
*)
	echo "usage: $0 test|infer|bench|torch|quick" >&2
	exit 2
	;;
esac
exit $rc
