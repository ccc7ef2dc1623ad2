#!/usr/bin/env bash
# bench/alternate.sh: one Go benchmark, run by several test binaries in turn,
# round after round, with the fastest and the median time of each.
#
# The benchmark guests here are shared: a run's speed moves by 20-40% in
# phases that last minutes, so one run of "before" and one of "after" compare
# the phases, not the code. Alternating the binaries N times puts each phase
# on all of them alike; the fastest run says what the code costs when the
# host leaves it alone, the median how it fares in the usual noise.
#
#   bench/alternate.sh [-n ROUNDS] -b 'BENCH REGEXP' [-t BENCHTIME] [-e VAR=VALUE]... BINARY...
#
# Each BINARY is a test binary (go test -c -o old.test ./pkg/, one per
# revision, e.g. from a `git worktree` of the old one); it runs
# `BINARY -test.run '^$' -test.bench REGEXP -test.benchtime BENCHTIME`, with
# the -e variables in its environment, and the first benchmark line's ns/op
# counts (make the regexp match one benchmark). Pause the background trainer
# first (train/continue.sh pause). Output, one line per binary:
#
#   old.test: min 5794571 med 6307351 ns/op (6 runs)
set -euo pipefail

rounds=5 bench= benchtime=1s
envs=()
while getopts "n:b:t:e:h" opt; do
	case $opt in
	n) rounds=$OPTARG ;;
	b) bench=$OPTARG ;;
	t) benchtime=$OPTARG ;;
	e) envs+=("$OPTARG") ;;
	*) sed -n '2,19p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [[ -z $bench || $# -eq 0 ]]; then
	echo "bench/alternate.sh: want -b 'BENCH REGEXP' and at least one test binary (-h: usage)" >&2
	exit 2
fi
case $rounds in '' | *[!0-9]* | 0) echo "bench/alternate.sh: -n $rounds: not a positive number of rounds" >&2; exit 2 ;; esac
for bin in "$@"; do
	[[ -x $bin ]] || { echo "bench/alternate.sh: $bin: not an executable test binary" >&2; exit 2; }
done

declare -A times
for ((r = 1; r <= rounds; r++)); do
	for bin in "$@"; do
		out=$(env "${envs[@]}" "$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" 2>&1) || {
			echo "bench/alternate.sh: $bin failed:" >&2
			echo "$out" >&2
			exit 1
		}
		ns=$(awk '/^Benchmark/ { for (i = 2; i <= NF; i++) if ($(i) == "ns/op") { print $(i - 1); exit } }' <<<"$out")
		if [[ -z $ns ]]; then
			echo "bench/alternate.sh: $bin: no benchmark matched $bench" >&2
			exit 1
		fi
		times[$bin]+="$ns "
	done
done
for bin in "$@"; do
	tr ' ' '\n' <<<"${times[$bin]}" | sed '/^$/d' | sort -g |
		awk -v bin="$bin" '{ t[NR] = $1 } END { printf "%s: min %s med %s ns/op (%d runs)\n", bin, t[1], t[int((NR + 1) / 2)], NR }'
done
