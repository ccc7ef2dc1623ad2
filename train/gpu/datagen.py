#!/usr/bin/env python3
"""Training data made on the GPU machine's spare cores while the GPU trains
(train/gpu/run.sh starts it), and the check that it is the data this
machine would make.

  datagen.py run --ndbg NDBG --python PY --tokenizer TOK --out DATA --first-seed S
                 [--programs 2000] [--jobs 6] [--workers 2] [--ahead 80] [--unsandboxed]
  datagen.py digest RAW_DIR      # the sha256 of ndbg data's shards (see digest)
  datagen.py golden --ndbg NDBG --python PY --golden golden.json --out DIR [--unsandboxed]
                                 # exit 0 only when PY makes golden.json's data

run: chunk k is `ndbg data --n PROGRAMS --seed S+k --families FAMILIES
--python PY` tokenized by `ndbg tokenize` with TOK, written as
DATA/chunk-<seed, 12 digits> (a folder of train.* and meta.json, renamed into
place whole), up to --jobs chunks at a time, until killed, and never more
than --ahead chunks that the trainer has not taken yet (it leaves a
.consumed file in each chunk it takes). FAMILIES is continuous.py's mix
(the seven short families twice, long once).

PY is the carried CPython 3.11 (pybundle.py), not the machine's own Python
3.12: traces differ between the two (train/README.md), and the model
learns the version ndbg is tested with. --unsandboxed: the GPU machine has
no bubblewrap; the programs traced are progen's own, generated from seeds,
so tracing them without the sandbox is acceptable there (docs/security.md
is about programs users bring).

Seeds: the GPU run's carried chunks use 3,000,000 + k and the ones made on
the machine 3,100,000 + k (train/README.md lists every seed range; none is
a held-out seed).
"""
import argparse
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

SHORT_FAMILIES = "dicts,exceptions,helpers,lists,numeric,recursion,strings"
FAMILIES = SHORT_FAMILIES + "," + SHORT_FAMILIES + ",long"  # = continuous.FAMILIES (test_gpu checks)
CARRIED_SEED_BASE = 3_000_000
MACHINE_SEED_BASE = 3_100_000


def chunk_name(seed):
    return f"chunk-{seed:012d}"


def digest(raw_dir):
    """sha256 over the lines of raw_dir's shard-*.jsonl in order, leaving
    out trajectories that hold a memory address (" at 0x": CPython prints
    where an object lives, which differs from run to run). Two
    interpreters that trace alike give the same digest."""
    h = hashlib.sha256()
    shards = sorted(glob.glob(os.path.join(raw_dir, "shard-*.jsonl")))
    if not shards:
        raise RuntimeError(f"{raw_dir}: no shard-*.jsonl")
    n = 0
    for p in shards:
        with open(p, "rb") as f:
            for line in f:
                if b" at 0x" not in line:
                    h.update(line)
                    n += 1
    if n == 0:
        raise RuntimeError(f"{raw_dir}: no trajectory without an address")
    return h.hexdigest()


def golden(args):
    """Whether args.python makes the data golden.json (train/gpu/build.sh)
    records: the same Python version, and the same digest of `ndbg data`
    with the same seed, count and families. Returns (ok, why)."""
    with open(args.golden) as f:
        g = json.load(f)
    r = subprocess.run([args.python, "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                       capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"})
    ver = r.stdout.strip()
    if r.returncode != 0 or ver != g["python"]:
        return False, f"{args.python} is Python {ver or '?'} ({r.stderr.strip()[-300:]}), golden.json wants {g['python']}"
    shutil.rmtree(args.out, ignore_errors=True)
    cmd = [args.ndbg, "data", "--n", str(g["n"]), "--seed", str(g["seed"]), "--families", g["families"],
           "--workers", "4", "--python", args.python, "--out", args.out] + (["--unsandboxed"] if args.unsandboxed else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return False, f"ndbg data failed (exit {r.returncode}): {r.stderr.strip()[-500:]}"
    d = digest(args.out)
    if d != g["digest"]:
        return False, f"the data differs: digest {d}, golden.json has {g['digest']}"
    return True, f"Python {ver} makes golden.json's data ({g['n']} programs, seed {g['seed']}, digest {d})"


def chunk_script(args, seed, tmp, dest):
    """The shell line that makes one chunk in tmp and renames it to dest."""
    q = lambda s: "'" + str(s).replace("'", "'\\''") + "'"  # noqa: E731
    unsb = " --unsandboxed" if args.unsandboxed else ""
    return (f"set -e; rm -rf {q(tmp)}; mkdir -p {q(tmp)}; "
            f"{q(args.ndbg)} data --n {args.programs} --seed {seed} --families {args.families} "
            f"--workers {args.workers} --python {q(args.python)}{unsb} --out {q(tmp)}/raw >/dev/null; "
            f"{q(args.ndbg)} tokenize --tokenizer {q(args.tokenizer)} --train {q(tmp)}/raw --val {q(tmp)}/raw "
            f"--out {q(tmp)}/tok >/dev/null; "
            f"rm -rf {q(tmp)}/raw {q(tmp)}/tok/val.*; mv {q(tmp)}/tok {q(dest)}; rmdir {q(tmp)}")


def pending(out):
    """Chunks made and not yet taken by the trainer."""
    return sum(1 for n in os.listdir(out) if n.startswith("chunk-") and
               not os.path.exists(os.path.join(out, n, ".consumed")))


def run(args):
    os.makedirs(args.out, exist_ok=True)
    stop = {"sig": None}

    def on_signal(signum, _f):
        stop["sig"] = signum
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.unsandboxed:
        print("datagen: tracing WITHOUT the sandbox (no bubblewrap here): the programs are progen's own, "
              "generated from seeds, not a user's", flush=True)
    print(f"datagen: {args.jobs} jobs of {args.workers} tracers, {args.programs} programs a chunk, seeds from "
          f"{args.first_seed}, families {args.families}, python {args.python}", flush=True)
    jobs = {}  # seed -> (Popen, started)
    seed, made, failed_in_a_row, failures = args.first_seed, 0, 0, 0
    t0 = time.time()
    try:
        while stop["sig"] is None:
            for s, (p, started) in list(jobs.items()):
                rc = p.poll()
                if rc is None:
                    continue
                del jobs[s]
                if rc == 0:
                    made += 1
                    failed_in_a_row = 0
                    if made % 10 == 0 or made == 1:
                        print(f"datagen: {made} chunks in {time.time() - t0:.0f} s (last {time.time() - started:.1f} s)",
                              flush=True)
                else:
                    failures += 1
                    failed_in_a_row += 1
                    err = p.stderr.read().decode(errors="replace")[-1500:] if p.stderr else ""
                    print(f"datagen: chunk seed {s} failed (exit {rc}): {err}", flush=True)
                    if failed_in_a_row >= 3:
                        print("datagen: three chunks failed in a row: stopping (the trainer goes on with what it has)",
                              flush=True)
                        return 1
            if args.max_chunks and made + len(jobs) >= args.max_chunks:
                if not jobs:
                    break
            elif len(jobs) < args.jobs and pending(args.out) + len(jobs) < args.ahead:
                tmp = os.path.join(args.out, f".tmp-{seed}")
                dest = os.path.join(args.out, chunk_name(seed))
                p = subprocess.Popen(["bash", "-c", chunk_script(args, seed, tmp, dest)], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
                jobs[seed] = (p, time.time())
                seed += 1
                continue
            time.sleep(0.2)
    finally:
        for s, (p, _) in jobs.items():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for s, (p, _) in jobs.items():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            shutil.rmtree(os.path.join(args.out, f".tmp-{s}"), ignore_errors=True)
        print(f"datagen: stopped; {made} chunks made, {failures} failed, in {time.time() - t0:.0f} s", flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--ndbg", required=True)
    r.add_argument("--python", required=True, help="the tracing interpreter (the carried 3.11)")
    r.add_argument("--tokenizer", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--first-seed", type=int, default=MACHINE_SEED_BASE)
    r.add_argument("--programs", type=int, default=2000)
    r.add_argument("--jobs", type=int, default=max(1, ((os.cpu_count() or 2) - 4) // 2))
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--ahead", type=int, default=80)
    r.add_argument("--max-chunks", type=int, default=0, help="stop after this many (0: until killed)")
    r.add_argument("--families", default=FAMILIES)
    r.add_argument("--unsandboxed", action="store_true")
    d = sub.add_parser("digest")
    d.add_argument("raw_dir")
    g = sub.add_parser("golden")
    g.add_argument("--ndbg", required=True)
    g.add_argument("--python", required=True)
    g.add_argument("--golden", required=True)
    g.add_argument("--out", required=True, help="scratch folder for the data")
    g.add_argument("--unsandboxed", action="store_true")
    args = ap.parse_args(argv)
    if args.cmd == "digest":
        print(digest(args.raw_dir))
        return 0
    if args.cmd == "golden":
        ok, why = golden(args)
        print(("golden check passed: " if ok else "golden check FAILED: ") + why)
        return 0 if ok else 1
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
