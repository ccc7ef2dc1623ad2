#!/usr/bin/env bash
# The promotion gate (train/promote.py): exports the continuous run's latest
# checkpoint, compares it with weights/default on a frozen evaluation set and
# replaces weights/default only when it is better; prints both models' figures
# and the decision either way.
#
#   train/promote.sh [--check] [RUN_DIR]
#
# --check compares and decides but never installs. RUN_DIR defaults to
# train/continue.sh's. PY: python with torch and numpy (default /usr/bin/python3).
set -euo pipefail
check=()
if [ "${1:-}" = --check ]; then check=(--check); shift; fi
run=${1:-${NDBG_TRAIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndbg/train}}
PY=${PY:-/usr/bin/python3}
command -v go >/dev/null || { echo "promote.sh: go is not on PATH" >&2; exit 1; }
"$PY" -c 'import torch, numpy' 2>/dev/null || {
  echo "promote.sh: $PY cannot import torch and numpy; on Debian: apt-get install -y python3-torch python3-numpy libopenblas0-pthread python3-matplotlib" >&2
  exit 1
}
exec "$PY" "$(dirname "$0")/promote.py" "${check[@]}" "$run"
