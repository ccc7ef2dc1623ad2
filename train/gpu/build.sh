#!/usr/bin/env bash
# Builds, on this machine (Go, the CUDA headers, CPython 3.11), everything the
# GPU run carries, into .gpurun/ at the repository root (ignored by git through
# .git/info/exclude); then checks that it and the working tree fit what a
# device call takes (64 MiB), and prints the run call (train/gpu/RUN.md).
#
#   train/gpu/build.sh [--tiny] [--out DIR] [--chunks N] [--no-cuda]
#
# .gpurun/ holds:
#   ndbg.tar.xz       static ndbg (CGO_ENABLED=0, no embedded model): data, tokenize
#   cudabin.tar.xz    cuda.test and cuda-bench (cgo, need only the driver's libcuda.so.1),
#                     for bench/cuda/run_on_gpu.sh; left out (with a warning) without
#                     the CUDA headers, or with --no-cuda
#   py311.tar.xz      this machine's CPython 3.11 with its own loader and libraries
#                     (pybundle.py): the traces the model learns are 3.11's
#   golden.json       the digest of `ndbg data` made by that bundle, equal to the
#                     one made by the interpreter it came from (checked here):
#                     run.sh checks it again there before generating with it
#   data/chunk-*.tar.xz   N chunks of 2000 programs (seeds 3,000,000 + k), tokenized:
#                     the floor the run trains on if the bundle cannot run there
#   heldout.tar.xz    the held-out loss split (seed 2, the seven short families)
#   manifest.json     what was built, from which commit, and the sizes
#
# --tiny: a few small chunks, no CUDA, fast compression (the CPU rehearsal,
# train/test_gpu.py). Data is kept between builds while the code that makes
# it, the interpreter and the tokenizer are unchanged (manifest.json's key).
# Environment: GO (go), PYTHON (the tracing interpreter; default python3 on PATH).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tiny=0 cuda=1 out=$root/.gpurun chunks=40
while [ $# -gt 0 ]; do
	case $1 in
	--tiny) tiny=1 cuda=0 chunks=2 ;;
	--out) out=$2; shift ;;
	--chunks) chunks=$2; shift ;;
	--no-cuda) cuda=0 ;;
	*) echo "usage: train/gpu/build.sh [--tiny] [--out DIR] [--chunks N] [--no-cuda]" >&2; exit 2 ;;
	esac
	shift
done
GO=${GO:-go}
HOSTPY=$(command -v python3) || { echo "build.sh: no python3 on PATH" >&2; exit 1; }
# The tracing interpreter, resolved through shims (pyenv) as ndbg resolves it.
PYTHON=${PYTHON:-$("$HOSTPY" -S -c 'import os, sys; print(os.path.realpath(sys.executable))')}
pyver=$("$PYTHON" -S -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
case $pyver in 3.11.*) ;; *) echo "build.sh: $PYTHON is Python $pyver; the model learns 3.11's traces (train/README.md)" >&2; exit 1 ;; esac
programs=2000 preset=6
[ $tiny = 1 ] && programs=150 preset=0

# .gpurun must never be committed: it is ignored through .git/info/exclude
# (a folder at the root, named in the run call's carry).
if [ "$out" = "$root/.gpurun" ]; then
	exclude=$(git rev-parse --git-path info/exclude)
	mkdir -p "$(dirname "$exclude")"
	grep -qx '/.gpurun/' "$exclude" 2>/dev/null || echo '/.gpurun/' >>"$exclude"
fi
mkdir -p "$out/data"
work=$(mktemp -d /tmp/ndbg-gpubuild.XXXXXX)
trap 'rm -rf "$work"' EXIT
xzpack() { # xzpack ARCHIVE DIR NAMES...: a .tar.xz of DIR's NAMES
	local a=$1 d=$2
	shift 2
	tar -C "$d" -cf - --owner=0 --group=0 "$@" | xz -T1 -"$preset" >"$a.tmp" && mv "$a.tmp" "$a"
}

echo "== ndbg (static, no embedded model)"
mkdir -p "$work/bin"
CGO_ENABLED=0 "$GO" build -tags nodefaultmodel -ldflags='-s -w' -o "$work/bin/ndbg" ./cmd/ndbg
xzpack "$out/ndbg.tar.xz" "$work/bin" ndbg
ndbg=$work/bin/ndbg

if [ $cuda = 1 ]; then
	if [ -f /usr/include/cuda.h ]; then
		echo "== CUDA binaries (cuda.test, cuda-bench)"
		mkdir -p "$work/cudabin"
		"$GO" test -tags cuda -c -o "$work/cudabin/cuda.test" ./cuda/
		"$GO" build -tags cuda -o "$work/cudabin/cuda-bench" ./bench/cuda
		{ git rev-parse --verify -q HEAD || echo unknown; } >"$work/cudabin/commit"
		xzpack "$out/cudabin.tar.xz" "$work/cudabin" cuda.test cuda-bench commit
	else
		echo "build.sh: WARNING: no /usr/include/cuda.h: the CUDA stage will be skipped there" >&2
		echo "  (install the headers first: cuda/README.md, 'Building'; about 3 minutes)" >&2
		rm -f "$out/cudabin.tar.xz"
	fi
else
	rm -f "$out/cudabin.tar.xz"
fi

echo "== CPython $pyver bundle"
PYBUNDLE_PRESET=$preset "$HOSTPY" train/gpu/pybundle.py --python "$PYTHON" --out "$out/py311.tar.xz"
mkdir -p "$work/bundle"
tar -C "$work/bundle" -xJf "$out/py311.tar.xz"
bundle=$work/bundle/py/bin/python3

# The bundle must trace exactly as the interpreter it came from: the same
# programs through both, the shards compared (datagen.py digest). The
# bundle runs unsandboxed, as it will there; the original as ndbg runs it here.
echo "== golden check: the bundle against $PYTHON"
gseed=2999999 gn=200
[ $tiny = 1 ] && gn=40
sandbox=()
bwrap --ro-bind / / true 2>/dev/null || sandbox=(--unsandboxed)
"$ndbg" data --n $gn --seed $gseed --families "$("$HOSTPY" -c 'import sys; sys.path.insert(0, "train/gpu"); import datagen; print(datagen.FAMILIES)')" \
	--workers 2 --python "$PYTHON" "${sandbox[@]}" --out "$work/golden-host" >/dev/null
fams=$(cat "$work/golden-host/stats.json" | "$HOSTPY" -c 'import json, sys; print(",".join(json.load(sys.stdin)["families"]))')
"$ndbg" data --n $gn --seed $gseed --families "$fams" --workers 2 --python "$bundle" --unsandboxed \
	--out "$work/golden-bundle" >/dev/null
dh=$("$HOSTPY" train/gpu/datagen.py digest "$work/golden-host")
db=$("$HOSTPY" train/gpu/datagen.py digest "$work/golden-bundle")
if [ "$dh" != "$db" ]; then
	echo "build.sh: the bundle traces differently from $PYTHON ($db against $dh): not carrying it" >&2
	exit 1
fi
bver=$("$HOSTPY" train/gpu/pybundle.py --check "$work/bundle/py")
printf '{"seed": %d, "n": %d, "families": "%s", "digest": "%s", "python": "%s"}\n' \
	$gseed $gn "$fams" "$dh" "$bver" >"$out/golden.json"
echo "   identical ($dh), Python $bver"

# Data: kept when the key (the code that makes it, the interpreter, the
# tokenizer, the chunk size) is unchanged.
key=$( (git ls-files -s progen dataset statetree dsl trace tokenizer cmd/ndbg/data.go cmd/ndbg/tokenize.go \
	train/gpu/datagen.py weights/default/tokenizer.json; git diff HEAD -- progen dataset statetree dsl trace \
	tokenizer cmd/ndbg train/gpu/datagen.py 2>/dev/null; echo "$pyver $programs") | sha256sum | cut -c1-16)
old=$(cat "$out/data/key" 2>/dev/null || true)
[ "$old" = "$key" ] || { rm -f "$out"/data/chunk-*.tar.xz "$out/heldout.tar.xz"; echo "$key" >"$out/data/key"; }
shopt -s nullglob
made=("$out"/data/chunk-*.tar.xz) # sorted by name, that is by seed
for f in "${made[@]:$chunks}"; do rm -f "$f"; done
have=$((${#made[@]} < chunks ? ${#made[@]} : chunks))
if [ "$have" -lt "$chunks" ]; then
	echo "== carried data: $((chunks - have)) more chunks of $programs programs (seeds from 3,000,000)"
	"$HOSTPY" train/gpu/datagen.py run --ndbg "$ndbg" --python "$PYTHON" --tokenizer weights/default/tokenizer.json \
		--out "$work/data" --first-seed $((3000000 + have)) --programs $programs --jobs 1 --workers 2 \
		--max-chunks $((chunks - have)) --ahead 1000000 "${sandbox[@]}"
	for d in "$work"/data/chunk-*; do
		n=$(basename "$d")
		xzpack "$out/data/$n.tar.xz" "$work/data" "$n"
	done
fi
if [ ! -f "$out/heldout.tar.xz" ]; then
	echo "== held-out split (seed 2, the seven short families)"
	hn=400
	[ $tiny = 1 ] && hn=40
	"$ndbg" data --n $hn --seed 2 --families dicts,exceptions,helpers,lists,numeric,recursion,strings --workers 2 \
		--python "$PYTHON" "${sandbox[@]}" --out "$work/heldout-raw" >/dev/null
	"$ndbg" tokenize --tokenizer weights/default/tokenizer.json --train "$work/heldout-raw" --val "$work/heldout-raw" \
		--out "$work/heldout" >/dev/null
	rm -f "$work"/heldout/train.*
	xzpack "$out/heldout.tar.xz" "$work" heldout
fi

carried=$(du -sb "$out" | cut -f1)
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
total=$((carried + tree))
commit=$(git rev-parse --verify -q HEAD || echo unknown)
dirty=$(git status --porcelain --untracked-files=no | wc -l)
made=("$out"/data/chunk-*.tar.xz)
cat >"$out/manifest.json" <<EOF
{"commit": "$commit", "uncommitted_changes": $dirty, "python": "$bver", "chunks": ${#made[@]},
 "programs_per_chunk": $programs, "tiny": $tiny, "cuda": $([ -f "$out/cudabin.tar.xz" ] && echo true || echo false),
 "carried_bytes": $carried, "tree_bytes": $tree, "built": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"}
EOF
echo "== .gpurun: $((carried / 1024)) KiB; working tree $((tree / 1024)) KiB; together $((total / 1024)) KiB of 65536"
ls -l "$out" "$out/data" | grep -v '^total'
if [ $total -gt $((60 * 1024 * 1024)) ]; then
	echo "build.sh: $total bytes would travel: over the 60 MiB kept under the 64 MiB limit (fewer --chunks)" >&2
	exit 1
fi
[ $tiny = 1 ] || { echo; echo "Ready. The device call (train/gpu/RUN.md):"; grep '^run(' train/gpu/RUN.md; }
