#!/usr/bin/env bash
# Rebuilds ndbg's default model from nothing: data from real CPython traces of
# generated programs, a byte-level BPE fitted to that text, token files, then
# train/train.py; with --install, copies the export into weights/default
# (embedded by the next `go build`). Every step is deterministic for a given seed.
#
#   train/make_default.sh [--install] WORK_DIR [train.py flags...]
#
# The model is written to WORK_DIR/model; weights/default is left alone unless
# --install is given. The shipped model was trained with
#   --batch-size 16 --batch-tokens 8192 --block 512 --steps 2100 --warmup 50 --threads 1
# (train/README.md). Environment: PROGRAMS (default 20000), VOCAB (4096), PY
# (python with torch and numpy: /usr/bin/python3 with Debian's python3-torch on
# the CPU; the GPU machine's python there). On a GPU, pass larger flags, e.g.
# --layers 8 --hidden 512 --steps 20000 --batch-tokens 131072 --block 2048.
set -euo pipefail
install=0
if [ "${1:-}" = --install ]; then install=1; shift; fi
work=${1:?usage: train/make_default.sh [--install] WORK_DIR [train.py flags...]}
shift
for a in "$@"; do
  [ "$a" = --install ] && { echo "make_default.sh: --install goes before WORK_DIR" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-/usr/bin/python3}
PROGRAMS=${PROGRAMS:-20000}
VOCAB=${VOCAB:-4096}
# The evaluation holds out the "mixed" family and seed 99 (ndbg eval).
FAMILIES=dicts,exceptions,helpers,lists,numeric,recursion,strings

# Every prerequisite before any work (the first steps take minutes).
missing=()
command -v go >/dev/null || missing+=("go")
command -v node >/dev/null || missing+=("node (the tokenizer trainer)")
[ -d "$root/tokenizer/oracle/node_modules/tokenizers" ] || command -v npm >/dev/null ||
  missing+=("npm (installs the tokenizers package into tokenizer/oracle)")
"$PY" -c 'import torch, numpy' 2>/dev/null ||
  missing+=("torch and numpy for $PY (Debian: apt-get install -y python3-torch python3-numpy libopenblas0-pthread; or set PY)")
if [ "$install" = 1 ]; then
  "$PY" -c 'import matplotlib' 2>/dev/null ||
    missing+=("matplotlib for $PY, for the card's loss.png (Debian: apt-get install -y python3-matplotlib)")
fi
if [ ${#missing[@]} -gt 0 ]; then
  printf 'make_default.sh: missing:\n' >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
"$PY" "$root/train/train.py" --help >/dev/null  # the flags are parsed again below; fail early on a bad PY

mkdir -p "$work"
go build -o "$work/ndbg" "$root/cmd/ndbg"

"$work/ndbg" data --n "$PROGRAMS" --seed 1 --families "$FAMILIES" --out "$work/train"
"$work/ndbg" data --n 400 --seed 2 --families "$FAMILIES" --out "$work/val"

# The BPE: the npm Hugging Face tokenizers library trains it on the first
# 8 shards, with every DSL special token (dsl.SpecialTokens) as an added token.
(cd "$root/tokenizer/oracle" && [ -d node_modules/tokenizers ] || npm install --silent)
"$PY" - "$work" <<'PYEOF'
import glob, json, sys
work = sys.argv[1]
with open(f"{work}/corpus.txt", "w") as out:
    for p in sorted(glob.glob(f"{work}/train/shard-*.jsonl"))[:8]:
        for line in open(p):
            out.write(json.loads(line)["text"] + "\n")
PYEOF
special=$(cd "$root" && go run ./dsl/internal/specials)
node "$root/tokenizer/oracle/oracle.js" train --vocab-size "$VOCAB" --special "$special" \
  --pattern llama3 --out "$work/tokenizer.json" "$work/corpus.txt"

"$work/ndbg" tokenize --tokenizer "$work/tokenizer.json" --train "$work/train" --val "$work/val" --out "$work/tok"

"$PY" "$root/train/train.py" --data "$work/tok" --tokenizer "$work/tokenizer.json" --out "$work/model" "$@"

if [ "$install" = 0 ]; then
  echo "model written to $work/model (weights/default unchanged; --install copies it there)"
  exit 0
fi
mkdir -p "$root/weights/default"
rm -f "$root/weights/default"/model*.safetensors "$root/weights/default"/model.safetensors.index.json \
  "$root/weights/default/training.json"
cp "$work/model"/{config.json,tokenizer.json,README.md,loss.png,loss.csv} "$root/weights/default/"
cp "$work/model"/model*.safetensors* "$root/weights/default/"
# The logits the Go engine must reproduce (TestDefaultModelMatchesTorch).
"$PY" "$root/train/reference_logits.py" "$root/weights/default" "$work/tok"
echo "default model written to weights/default; rebuild to embed it; then: go test -run DefaultModel . && ndbg eval"
