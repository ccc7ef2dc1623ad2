#!/usr/bin/env bash
# bench/llamacpp.sh: ndbg's CPU engine against llama.cpp, side by side in one run.
#
# Builds llama.cpp's llama-bench from a llama.cpp source tree (native CPU
# flags, only the targets it needs), writes GGUF files with the shapes of
# ndbg's presets (`ndbg bench --shapes`) and random weights of the same
# type (bf16, f32: by llama.cpp's gguf-py; q8_0, q4_0, q4_k_m: by `ndbg
# quantize --random`, quantized as llama-quantize does, and read by both
# engines: `ndbg bench --gguf`), then measures both engines interleaved (llama.cpp, ndbg, llama.cpp, ndbg, ...
# for each model, weight type and thread count), keeping each engine's best
# repetition. Prefill is a prompt of --prefill tokens; decode is --decode
# tokens after a context of --prefill tokens (llama-bench -d), as ndbg bench
# decodes after its prefill (the same lengths for every model: ndbg bench's
# shorter defaults for models over 1B are overridden). Prints one Markdown table of tokens/s and
# ndbg/llama.cpp ratios and, as its last line, `min ratio: X`.
#
# Not part of `make test`: it takes minutes and wants a quiet machine (pause
# the background trainer first: train/continue.sh pause).
#
#   bench/llamacpp.sh [--models 34m,134m] [--dtypes bf16,f32] [--threads 1,2]
#                     [--prefill 128] [--decode 32] [--reps 3] [--fast]
#                     [--src DIR] [--work DIR] [--build-only]
#
# --dtypes: bf16, f32, q8_0, q4_0, q4_k_m (llama.cpp's Q4_K_M mix).
# --fast: ndbg's BF16 rows with BF16 activations in the products
#   (`ndbg bench --fast`, kernels.Fast: VDPBF16PS where the CPU has
#   AVX512_BF16), which is what llama.cpp computes on such a CPU (it rounds
#   the activations to BF16 for BF16 weights); the kernels column says which
#   ran. Without it ndbg keeps float32 activations (its default).
# --build-only: build llama.cpp's tools (llama-bench, llama-quantize,
#   llama-perplexity and libllama: what the tests that compare with
#   llama.cpp use, internal/testsupport/oracle) into WORK/build and stop.
#
# --src: a llama.cpp source tree (default $LLAMACPP_SRC). Measured with the
#   kainlan/llama.cpp-intel-optimizations mirror of llama.cpp at commit
#   81ff7abe (the upstream repository is over 1.4 GB).
# --work: where the build and the GGUF files are kept between runs
#   (default ~/.cache/ndbg/llamacpp).
set -euo pipefail

models=34m,134m
dtypes=bf16,f32
threads=1,2
prefill=128
decode=32
reps=3
build_only=
fast=
src=${LLAMACPP_SRC:-}
work=${XDG_CACHE_HOME:-$HOME/.cache}/ndbg/llamacpp
python=${PYTHON:-/usr/bin/python3}

usage() { sed -n '/^#   bench\/llamacpp.sh/,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
while [ $# -gt 0 ]; do
	case $1 in
	--models) models=$2; shift 2 ;;
	--dtypes) dtypes=$2; shift 2 ;;
	--threads) threads=$2; shift 2 ;;
	--prefill) prefill=$2; shift 2 ;;
	--decode) decode=$2; shift 2 ;;
	--reps) reps=$2; shift 2 ;;
	--src) src=$2; shift 2 ;;
	--work) work=$2; shift 2 ;;
	--build-only) build_only=1; shift ;;
	--fast) fast=--fast; shift ;;
	-h|--help) usage 0 ;;
	*) echo "llamacpp.sh: unknown argument $1" >&2; usage 2 >&2 ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
missing=()
[ -n "$build_only" ] || command -v go >/dev/null || missing+=("go (to build ndbg)")
command -v cmake >/dev/null || missing+=("cmake (apt-get install cmake)")
command -v c++ >/dev/null || missing+=("a C++ compiler (apt-get install g++)")
[ -n "$build_only" ] || "$python" -c 'import numpy' 2>/dev/null || missing+=("numpy for $python (apt-get install python3-numpy)")
if [ -z "$src" ] || [ ! -f "$src/tools/llama-bench/llama-bench.cpp" ] || [ ! -d "$src/gguf-py/gguf" ]; then
	missing+=("a llama.cpp source tree with tools/llama-bench and gguf-py, given by --src or LLAMACPP_SRC (for example: git clone https://github.com/kainlan/llama.cpp-intel-optimizations && git -C llama.cpp-intel-optimizations checkout 81ff7abe)")
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "llamacpp.sh: missing:" >&2
	printf '  - %s\n' "${missing[@]}" >&2
	exit 1
fi
src=$(cd "$src" && pwd)
mkdir -p "$work/gguf"

log() { echo "llamacpp.sh: $*" >&2; }

# llama-bench and the tools the tests compare with, built once per source
# tree (a stamp names the tree).
bench=$work/build/bin/llama-bench
if [ ! -x "$bench" ] || [ ! -x "$work/build/bin/llama-quantize" ] || [ "$(cat "$work/build/.src" 2>/dev/null)" != "$src" ]; then
	log "building llama-bench, llama-quantize, llama-perplexity and libllama from $src (native CPU flags; several minutes)"
	cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >"$work/cmake.log" 2>&1 ||
		{ log "cmake failed, see $work/cmake.log"; exit 1; }
	cmake --build "$work/build" --target llama-bench llama-quantize llama-perplexity llama -j "$(nproc)" >"$work/build.log" 2>&1 ||
		{ log "build failed, see $work/build.log"; exit 1; }
	echo "$src" >"$work/build/.src"
fi
if [ -n "$build_only" ]; then
	log "built into $work/build (tests find it there, or set LLAMACPP_BUILD=$work/build)"
	exit 0
fi

ndbg=$work/ndbg
(cd "$root" && go build -o "$ndbg" ./cmd/ndbg)

# best VALUE... prints the largest of its arguments.
best() { printf '%s\n' "$@" | sort -g | tail -1; }

# llama_ts GGUF THREADS ARGS... runs llama-bench once and prints its tokens/s.
llama_ts() {
	local f=$1 t=$2
	shift 2
	"$bench" -m "$f" -t "$t" -r 1 -o jsonl "$@" 2>/dev/null |
		"$python" -c 'import json,sys; print(json.loads(sys.stdin.readline())["avg_ts"])'
}

printf '| model | weights | threads | llama.cpp prefill tok/s | ndbg prefill | ratio | llama.cpp decode tok/s | ndbg decode | ratio | ndbg kernels |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
min=
IFS=, read -ra model_list <<<"$models"
IFS=, read -ra dtype_list <<<"$dtypes"
IFS=, read -ra thread_list <<<"$threads"
for m in "${model_list[@]}"; do
	shape=$("$ndbg" bench --shapes --models "$m")
	for d in "${dtype_list[@]}"; do
		g=$work/gguf/$m-$d.gguf
		if [ ! -s "$g" ]; then
			log "writing $g"
			case $d in
			bf16 | f32) PYTHONPATH=$src/gguf-py "$python" "$root/bench/llamacpp_gguf.py" "$shape" "$d" "$g.tmp" ;;
			*) "$ndbg" quantize --random "$m" --type "$d" --out "$g.tmp" >/dev/null ;;
			esac
			mv "$g.tmp" "$g"
		fi
		for t in "${thread_list[@]}"; do
			lp=() ld=() np=() nd=() kern=
			for ((r = 0; r < reps; r++)); do
				lp+=("$(llama_ts "$g" "$t" -p "$prefill" -n 0)")
				ld+=("$(llama_ts "$g" "$t" -p 0 -n "$decode" -d "$prefill")")
				line=$("$ndbg" bench --json --models "$m" --dtypes "$d" --threads "$t" --gguf "$work/gguf" \
					--prefill "$prefill" --decode "$decode" \
					--large-prefill "$prefill" --large-decode "$decode" --reps 1 $fast 2>/dev/null | tail -1)
				np+=("$(echo "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["prefill_tok_s"])')")
				nd+=("$(echo "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["decode_tok_s"])')")
				kern=$(echo "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["kernels"])')
			done
			bl=$(best "${lp[@]}") bld=$(best "${ld[@]}") bn=$(best "${np[@]}") bnd=$(best "${nd[@]}")
			rp=$("$python" -c "print(f'{$bn/$bl:.2f}')") rd=$("$python" -c "print(f'{$bnd/$bld:.2f}')")
			printf '| %s | %s | %s | %.0f | %.0f | %s | %.1f | %.1f | %s | %s |\n' \
				"$m" "$d" "$t" "$bl" "$bn" "$rp" "$bld" "$bnd" "$rd" "$kern"
			min=$(printf '%s\n' $min "$rp" "$rd" | sort -g | head -1)
		done
	done
done
echo
echo "min ratio: $min"
