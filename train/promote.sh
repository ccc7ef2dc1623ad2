#!/usr/bin/env bash
# The promotion gate (train/promote.py): evaluates a candidate and the shipped
# model (weights/default) on generated held-out programs (a frozen set and a
# fresh one drawn each time; CRUXEval's development split is reported, never
# part of the decision), checks the candidate's calibration, and replaces
# weights/default only when the candidate is better; prints both models'
# figures and the decision either way.
#
#   train/promote.sh [--check] [RUN_DIR]                 # the continuous run's latest checkpoint
#   train/promote.sh [--check] [--no-rebase] --model DIR [RUN_DIR]
#                                                        # an exported model: the GPU run's (train/gpu/RUN.md)
#
# --check compares and decides but never installs. RUN_DIR defaults to
# train/continue.sh's. A model promoted with --model becomes the continuous
# run's new starting point (train/continue.sh rebase) unless --no-rebase.
# PY: python with torch and numpy (default /usr/bin/python3).
set -euo pipefail
opts=()
while [ $# -gt 0 ]; do
  case $1 in
  --check | --no-rebase) opts+=("$1") ;;
  --model | --fresh-seed)
    [ $# -ge 2 ] || { echo "promote.sh: $1 needs a value" >&2; exit 2; }
    opts+=("$1" "$2"); shift ;;
  -*) echo "usage: train/promote.sh [--check] [--no-rebase] [--model DIR] [--fresh-seed N] [RUN_DIR]" >&2; exit 2 ;;
  *) break ;;
  esac
  shift
done
run=${1:-${NDBG_TRAIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndbg/train}}
PY=${PY:-/usr/bin/python3}
command -v go >/dev/null || { echo "promote.sh: go is not on PATH" >&2; exit 1; }
"$PY" -c 'import torch, numpy' 2>/dev/null || {
  echo "promote.sh: $PY cannot import torch and numpy; on Debian: apt-get install -y python3-torch python3-numpy libopenblas0-pthread python3-matplotlib" >&2
  exit 1
}
exec "$PY" "$(dirname "$0")/promote.py" "${opts[@]}" "$run"
