#!/usr/bin/env bash
# The GPU run in one command, on the GPU machine (train/gpu/RUN.md has the
# device call): checks the CUDA backend, trains the largest model that comes
# back within the limits, and keeps the newest checkpoint in $OUT all along.
#
#   bash train/gpu/run.sh            # the real run: at most 9 minutes
#   bash train/gpu/run.sh --tiny     # the same steps in seconds, on a CPU (train/test_gpu.py)
#
# Needs .gpurun/ (train/gpu/build.sh, carried: GPURUN overrides the path),
# python3 with torch and numpy (PY overrides), and $OUT (default
# /tmp/ndbg-gpu-out). Time from the start (full run; --tiny shrinks it all):
#
#   0-10 s     unpack .gpurun; the carried CPython 3.11 must reproduce
#              golden.json's data (same digest as here) before it makes any:
#              then datagen.py makes chunks on the cores the trainer leaves
#              (WITHOUT the sandbox: no bubblewrap there, and the programs are
#              progen's own); else the run trains on the carried chunks only
#   -100 s     bench/cuda/run_on_gpu.sh test, then its kernel benchmark, under
#              time caps; a failure is logged and training goes on
#   -470 s     gpu_train.py: 8 layers x 512 (29.9M parameters, 57 MiB in
#              BF16: four shards under 16 MiB), first export after 30 s of
#              training, then every 75 s, the last at the deadline (470 s)
#   500 s      SIGTERM to a trainer still running (it exports and exits), KILL at 515 s
#   then       the report (logs, loss curve, tokens/s, MFU) packed into
#              $OUT/run.tgz; the whole command ends within 9 minutes
#
# $OUT at the end (8 files, 64 MiB at most, what the device tool brings back):
#   model/model-0000k-of-00004.safetensors, model/model.safetensors.index.json,
#   model/config.json, model/tokenizer.json   the checkpoint (the Go engine loads the folder)
#   run.tgz   run.log, env.txt, cuda/*.log, datagen.log, loss.csv, curve.csv, training.json
# train/gpu/reassemble.py turns that into a model folder for the gate.
set -uo pipefail
T0=$(date +%s)
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tiny=0
[ "${1:-}" = --tiny ] && tiny=1
OUT=${OUT:-/tmp/ndbg-gpu-out}
G=${GPURUN:-$root/.gpurun}
PY=${PY:-python3}
W=${WORK:-/tmp/ndbg-gpu-work}
rm -rf "$W"
mkdir -p "$OUT" "$W/bin" "$W/data" "$W/report/cuda"
R=$W/report
exec > >(tee -a "$R/run.log") 2>&1

if [ $tiny = 1 ]; then
	CUDA_END=10 TRAIN_SECONDS=${TINY_TRAIN_SECONDS:-8} TERM_AFTER=90 KILL_AFTER=10
	MODEL=(--layers 2 --hidden 64 --heads 4 --ffn 128 --block 2048 --batch-tokens 4096 --warmup 5 --lr 3e-3
		--shard-mib 0.25 --first-export 0 --export-every 2 --export-margin 1 --log-every 0 --eval-batches 2 --eval-rows 8
		--threads 1)
	GEN=(--programs 100 --jobs 1 --workers 1 --max-chunks 2)
else
	# TRAIN_END and TERM_AT (seconds from the start) shorten a second try (RUN.md).
	CUDA_END=${CUDA_END:-100} TRAIN_END=${TRAIN_END:-470} TERM_AT=${TERM_AT:-500} KILL_AFTER=15
	MODEL=(--layers 8 --hidden 512 --heads 8 --block 2048 --batch-tokens 131072 --warmup 150 --lr 2e-3
		--shard-mib 15 --first-export 30 --export-every 75 --log-every 10)
	GEN=(--programs 2000)
fi
since() { echo $(($(date +%s) - T0)); }
say() { echo "[run.sh $(since)s] $*"; }
pack() { "$PY" train/gpu/outbox.py pack "$R" "$OUT/run.tgz" || say "packing the report failed"; }
unpack() { tar -C "$2" -xJf "$1" 2>/dev/null || "$PY" -m tarfile -e "$1" "$2"; }

say "start: tiny=$tiny OUT=$OUT GPURUN=$G WORK=$W"
{
	date -u
	uname -a
	echo "cores: $(nproc)"
	free -g 2>/dev/null | head -2
	df -h "$W" "$OUT" 2>/dev/null
	nvidia-smi 2>&1 | head -15
	"$PY" -c 'import sys, torch, numpy; print("python", sys.version.split()[0], "torch", torch.__version__, "numpy", numpy.__version__, "cuda", torch.cuda.is_available())'
	cat "$G/manifest.json"
} >"$R/env.txt" 2>&1
cat "$R/env.txt"

# --- unpack
[ -f "$G/ndbg.tar.xz" ] && [ -f "$G/heldout.tar.xz" ] && [ -f "$G/golden.json" ] || {
	say "FATAL: $G lacks ndbg.tar.xz, heldout.tar.xz or golden.json: run train/gpu/build.sh first (and carry .gpurun)"
	exit 1
}
unpack "$G/ndbg.tar.xz" "$W/bin" && unpack "$G/heldout.tar.xz" "$W" || { say "FATAL: unpacking failed"; exit 1; }
NDBG=$W/bin/ndbg
ls "$G"/data/chunk-*.tar.xz 2>/dev/null | xargs -r -P "$(nproc)" -I{} sh -c "tar -C '$W/data' -xJf '{}' 2>/dev/null || '$PY' -m tarfile -e '{}' '$W/data'"
say "carried data: $(ls -d "$W"/data/chunk-* 2>/dev/null | wc -l) chunks"
[ -f "$G/cudabin.tar.xz" ] && mkdir -p "$W/cudabin" && unpack "$G/cudabin.tar.xz" "$W/cudabin"
pyver=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["python"])' "$G/golden.json")  # 3.11.x

# --- the carried interpreter, checked against this machine's build
gen_ok=0
if [ -f "$G/py311.tar.xz" ] && unpack "$G/py311.tar.xz" "$W"; then
	BPY=$W/py/bin/python3
	if "$PY" train/gpu/datagen.py golden --ndbg "$NDBG" --python "$BPY" --golden "$G/golden.json" --out "$W/golden" \
		--unsandboxed >"$R/golden.txt" 2>&1; then
		gen_ok=1
		say "$(cat "$R/golden.txt"): the carried interpreter makes here the data it makes at home"
	else
		say "$(cat "$R/golden.txt"): no data is made here; training on the carried chunks"
	fi
else
	say "no carried interpreter: training on the carried chunks"
fi
if [ $gen_ok = 1 ]; then
	echo "This machine has no bubblewrap: datagen traces WITHOUT the sandbox. Acceptable because the programs are progen's own, made from seeds (docs/security.md is about programs users bring)." >>"$R/golden.txt"
	"$PY" train/gpu/datagen.py run --ndbg "$NDBG" --python "$BPY" --tokenizer weights/default/tokenizer.json \
		--out "$W/data" --unsandboxed "${GEN[@]}" >"$R/datagen.log" 2>&1 &
	gen_pid=$!
	say "datagen started (pid $gen_pid)"
fi

# The trainer's model tests on this torch, on the CPU cores meanwhile: among
# them the fused attention against the blocked one (skipped where torch has
# no fused kernel, as on Debian's 1.13).
(cd train && timeout 120 "$PY" -m unittest test_continuous.ModelTest >"$R/modeltest.txt" 2>&1 &&
	echo "[run.sh] train/test_continuous.py ModelTest passed on this torch" ||
	echo "[run.sh] train/test_continuous.py ModelTest FAILED on this torch: see modeltest.txt") &

# --- the CUDA backend: conformance suite, then the kernel benchmark, capped
if [ -f "$W/cudabin/cuda.test" ] && nvidia-smi >/dev/null 2>&1; then
	left=$((CUDA_END - $(since) - 5))
	say "CUDA stage: run_on_gpu.sh test (up to $((left * 2 / 3)) s), then bench --kernels-only"
	BIN=$W/cudabin OUT=$R/cuda TEST_TIMEOUT=$((left * 2 / 3)) timeout $((left * 2 / 3 + 5)) bash bench/cuda/run_on_gpu.sh test ||
		say "CUDA test stage FAILED (rc $?): see cuda/test.log; training goes on"
	left=$((CUDA_END - $(since)))
	if [ $left -gt 8 ]; then
		BIN=$W/cudabin OUT=$R/cuda MODELS=1.8b BENCH_TIMEOUT=$((left - 3)) BENCH_FLAGS=-kernels-only \
			timeout $((left)) bash bench/cuda/run_on_gpu.sh bench >/dev/null 2>&1 ||
			say "CUDA bench stage FAILED or was cut (rc $?): see cuda/bench.log"
		tail -25 "$R/cuda/bench.log" 2>/dev/null
	fi
else
	say "CUDA stage skipped: $([ -f "$W/cudabin/cuda.test" ] && echo 'no GPU (nvidia-smi failed)' || echo 'no cudabin.tar.xz carried')"
fi

# --- training
if [ $tiny = 1 ]; then
	deadline=$(($(date +%s) + TERM_AFTER - 10)) # a backstop: --train-seconds ends it
	MODEL+=(--train-seconds "$TRAIN_SECONDS")
	term_in=$TERM_AFTER
else
	deadline=$((T0 + TRAIN_END))
	term_in=$((TERM_AT - $(since)))
fi
say "training until $(date -d @$deadline +%T 2>/dev/null || echo $deadline)"
# Batches change shape from step to step: expandable segments keep the
# CUDA caching allocator from fragmenting.
PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True} \
	OMP_NUM_THREADS=${OMP_NUM_THREADS:-4} PYTHONUNBUFFERED=1 timeout --signal=TERM --kill-after=$KILL_AFTER $term_in \
	"$PY" train/gpu/gpu_train.py --data "$W/data" --heldout "$W/heldout" --tokenizer weights/default/tokenizer.json \
	--out "$OUT/model" --report "$R" --report-out "$OUT/run.tgz" --deadline "$deadline" --python-version "$pyver" \
	"${MODEL[@]}"
rc=$?
say "trainer exited with $rc"

# --- wrap up
if [ -n "${gen_pid:-}" ]; then
	kill -TERM "$gen_pid" 2>/dev/null
	wait "$gen_pid" 2>/dev/null
fi
"$PY" - "$R/training.json" <<'PYEOF' || true
import json, sys
try:
    t = json.load(open(sys.argv[1]))
except Exception as e:
    print("no training.json:", e); sys.exit(0)
d = t.get("data", {})
print(f"summary: {t['params']:,} parameters, {t['step']} steps, {t['tokens']:,} loss tokens "
      f"({t['tokens_processed']:,} tokens), {t['train_seconds']} s of training on {t.get('gpu') or t['device']}, {t['tokens_per_s']:,} tokens/s, "
      f"{t['model_tflops_per_s']} TFLOP/s, MFU {t.get('mfu_nominal')} of nominal, {t.get('mfu_measured')} of measured; "
      f"held-out loss {t['heldout_loss']}; stopped: {t['stopped']}; compile: {t['compile']}; "
      f"data: {d.get('chunks_fresh')} fresh chunks, {d.get('chunks_repeated')} repeated; {t['exports']} exports")
PYEOF
pack
"$PY" train/gpu/outbox.py check "$OUT" && say "OUT is within the device limits:" || say "OUT is OVER the device limits:"
(cd "$OUT" && find . -type f -printf '%8k KiB  %p\n' | sort -k3)
say "done in $(since) s"
[ -f "$OUT/model/config.json" ] || exit 1
exit $rc
