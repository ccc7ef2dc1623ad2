#!/usr/bin/env bash
# Continuous training of the default model in the background (train/continuous.py):
#
#   train/continue.sh start|stop|pause|resume|status [RUN_DIR]
#   train/continue.sh rebase MODEL_DIR [RUN_DIR]
#
# start   resumes the run in RUN_DIR where its checkpoint left it, or starts one
#         from $FROM (default weights/default) when there is none (a new machine);
#         runs under nice -n 19 with one thread, detached (it outlives the shell),
#         log in RUN_DIR/train.log
# rebase  stop, move the run's state into RUN_DIR/previous-<time>/, start a new
#         run from MODEL_DIR (an exported model: the GPU run's once promoted, which
#         train/promote.sh --model does by itself; train/README.md)
# stop    SIGTERM: the trainer writes a checkpoint and exits (waits for it)
# pause   SIGSTOP to the trainer and its data generator (do this before a benchmark)
# resume  SIGCONT
# status  running, paused or stopped, and RUN_DIR/progress.json
#
# RUN_DIR defaults to $NDBG_TRAIN_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/ndbg/train.
# Environment: PY (python with torch and numpy; default /usr/bin/python3),
# THREADS (torch and BLAS threads, default 1).
set -euo pipefail
cmd=${1:-}
root=$(cd "$(dirname "$0")/.." && pwd)
from=${FROM:-$root/weights/default}
if [ "$cmd" = rebase ]; then
  from=${2:?usage: train/continue.sh rebase MODEL_DIR [RUN_DIR]}
  [ -f "$from/config.json" ] || { echo "continue.sh: $from has no config.json: not an exported model" >&2; exit 1; }
  from=$(cd "$from" && pwd)
  shift
fi
run=${2:-${NDBG_TRAIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ndbg/train}}
PY=${PY:-/usr/bin/python3}
THREADS=${THREADS:-1}

# pid prints the trainer's pid when it is alive, else nothing.
pid() {
  local p
  p=$(cat "$run/pid" 2>/dev/null) || return 0
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null && grep -q continuous.py "/proc/$p/cmdline" 2>/dev/null; then
    echo "$p"
  fi
}

# state prints running, paused or stopped.
state() {
  local p
  p=$(pid)
  if [ -z "$p" ]; then echo stopped; return; fi
  case $(awk '{print $3}' "/proc/$p/stat") in
    T | t) echo paused ;;
    *) echo running ;;
  esac
}

case $cmd in
rebase)
  "$0" stop "$run"
  "${PY:-/usr/bin/python3}" "$root/train/continuous.py" rebase --run-dir "$run"
  FROM=$from exec "$0" start "$run"
  ;;
start)
  if [ -n "$(pid)" ]; then
    echo "already $(state): pid $(pid), run $run" >&2
    exit 1
  fi
  command -v go >/dev/null || { echo "continue.sh: go is not on PATH (it builds the data generator)" >&2; exit 1; }
  "$PY" -c 'import torch, numpy' 2>/dev/null || {
    echo "continue.sh: $PY cannot import torch and numpy; on Debian: apt-get install -y python3-torch python3-numpy libopenblas0-pthread" >&2
    exit 1
  }
  mkdir -p "$run"
  (cd "$root" && go build -o "$run/ndbg" ./cmd/ndbg)
  rm -f "$run/pid"
  # setsid: its own session and process group (pause stops the group), no terminal.
  OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS setsid nohup nice -n 19 \
    "$PY" "$root/train/continuous.py" run --run-dir "$run" --ndbg "$run/ndbg" --threads "$THREADS" \
    --from "$from" >>"$run/train.log" 2>&1 </dev/null &
  for _ in $(seq 50); do
    [ -n "$(pid)" ] && break
    sleep 0.2
  done
  if [ -z "$(pid)" ]; then
    echo "continue.sh: the trainer did not start; the end of $run/train.log:" >&2
    tail -5 "$run/train.log" >&2
    exit 1
  fi
  # setsid made a new session, and with the kernel's autogroup scheduling
  # (sched_autogroup_enabled) a session competes as one group whatever its
  # processes' nice: lower the group's weight too, or the trainer takes a
  # whole core from every other session (benchmarks included).
  [ -w "/proc/$(pid)/autogroup" ] && echo 19 >"/proc/$(pid)/autogroup" 2>/dev/null || true
  echo "training in the background: pid $(pid), run $run, log $run/train.log"
  ;;
stop)
  p=$(pid)
  if [ -z "$p" ]; then echo "not running (run $run)"; exit 0; fi
  kill -TERM "$p"
  kill -CONT -- "-$p" 2>/dev/null || kill -CONT "$p"  # a paused trainer must run to act on SIGTERM
  for _ in $(seq 600); do
    kill -0 "$p" 2>/dev/null || { tail -1 "$run/train.log"; exit 0; }
    sleep 0.5
  done
  echo "continue.sh: pid $p still running after 300 s" >&2
  exit 1
  ;;
pause | resume)
  p=$(pid)
  if [ -z "$p" ]; then echo "not running (run $run)"; exit 0; fi
  sig=STOP
  [ "$cmd" = resume ] && sig=CONT
  # The trainer leads its process group (setsid), which holds the data generator too.
  kill "-$sig" -- "-$p" 2>/dev/null || kill "-$sig" "$p"
  echo "$(state): pid $p, run $run"
  ;;
status)
  echo "$(state)${run:+: run $run}$( [ -n "$(pid)" ] && echo ", pid $(pid)")"
  [ -f "$run/progress.json" ] && cat "$run/progress.json"
  [ -f "$run/train.log" ] && tail -2 "$run/train.log"
  exit 0
  ;;
*)
  echo "usage: train/continue.sh start|stop|pause|resume|status [RUN_DIR] | rebase MODEL_DIR [RUN_DIR]" >&2
  exit 2
  ;;
esac
