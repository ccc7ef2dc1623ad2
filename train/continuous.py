#!/usr/bin/env python3
"""Continuous training of ndbg's default model: one run that goes on for days,
stopped and resumed at will, on data the generator makes as it goes.

  continuous.py run --run-dir DIR --ndbg NDBG [--from weights/default] [settings...]
  continuous.py export --run-dir DIR --out MODEL_DIR
  continuous.py rebase --run-dir DIR

`rebase` moves a stopped run's state (checkpoint, chunks, held-out split,
tokenizer, progress, gate figures) into DIR/previous-<UTC time>/, so that the
next `run` starts a new run from --from: how a model trained elsewhere (the
GPU run's, once promoted into weights/default) becomes the CPU trainer's
starting point (train/continue.sh rebase).

`run` resumes the run in DIR exactly where its checkpoint left it (weights,
AdamW state, the weight average, the data position, torch's RNG), or, when DIR
holds no checkpoint, starts one from the exported model in --from with a fresh
optimizer; the vocabulary stays that model's tokenizer.json, copied into DIR.
train/continue.sh starts it in the background; see train/README.md.

Data is a rolling corpus of chunks in DIR/chunks: chunk k is
`ndbg data --n PROGRAMS --seed 1000+k --families <the run's mix at k>` (never
the held-out seeds 2 and 99 nor the family mixed) tokenized by `ndbg tokenize`.
The mix is FAMILIES; a run records in its settings ("mixes") from which chunk
on each mix applies, and a run resumed by code whose FAMILIES differ switches
from the first chunk not yet made, so every chunk can still be made again
exactly as it was trained on.
A child process makes the next chunks while the current one trains, and a
chunk is deleted once trained on. Each chunk is trained on once, in
length-bucketed batches (train.bucket) whose order is a function of the run's
seed and k alone, so the data position is (chunk, batch) and a lost chunk is
made again identically (ndbg data is deterministic per seed).

The learning rate is constant after a warmup (a run without an end has no
cosine to follow); an exponential moving average of the weights is kept beside
them, and `export` writes whichever of the two had the lower held-out loss at
the last evaluation. `run --cooldown N` ends a run instead (the decay of a
warmup-stable-decay schedule): the learning rate falls linearly over its next
N steps (the last at 1/N of it), the held-out loss is measured after the last,
and the run stops there; stopped midway, it starts over when run again with
--cooldown. Do it on a copy of the run's directory, so that the continuous run
itself goes on at its constant rate (train/README.md has the steps, and
train/RESULTS.md what a cooldown did against the weight average). The held-out
loss uses the shipped model's split (`ndbg data --n 400 --seed 2`, fixed
batches), so the curve continues its card's.

Checkpoints (DIR/ckpt.pt) are written at least every --ckpt-minutes, and on
SIGTERM or SIGINT, which end the run cleanly; writes go to a temporary file
renamed into place, so a crash never leaves a torn checkpoint. DIR/progress.json
(rewritten every --log-every steps) and the checkpoint record the tokens seen
(loss targets) and the CPU-seconds used, cumulative from the model's first step.
"""
import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402

# The families make_default.sh trains on; "mixed" is held out (ndbg eval). The
# held-out loss split is drawn from these, so its curve continues the card's.
SHORT_FAMILIES = "dicts,exceptions,helpers,lists,numeric,recursion,strings"
# The training mix: the seven named twice, plus progen's long family once
# (1 program in 15), whose trajectories of 1,300-2,000 tokens train the
# positions of the 2048 context that the others (50-900 tokens) never reach.
# A long program costs about seven short ones in tokens, mostly source
# without loss: at 3 in 10 they took three quarters of the compute and cut
# loss tokens per CPU-second 3.7x (train/RESULTS.md); at 1 in 15 they take
# about a third.
FAMILIES = SHORT_FAMILIES + "," + SHORT_FAMILIES + ",long"
CHUNK_SEED_BASE = 1000  # chunk k uses seed 1000+k: never 1 (the shipped data), 2 or 99 (held out)
HELDOUT_SEED, HELDOUT_PROGRAMS = 2, 400
# CPU-seconds of the shipped model's own run when its export records none: 110.6 minutes
# with two busy threads (one OpenMP, one OpenBLAS; weights/default/README.md).
SHIPPED_CPU_SECONDS = 2 * 110.6 * 60


def atomic_write(path, data):
    """Writes bytes or text to path through a temporary file and a rename."""
    tmp = path + ".tmp"
    with open(tmp, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    os.replace(tmp, path)


def shipped_history(model_dir):
    """The loss rows, steps, tokens and CPU-seconds behind an export: its
    training.json (written by train/promote.sh) when there is one, else its
    loss.csv and the shipped run's CPU time."""
    rows = []
    path = os.path.join(model_dir, "loss.csv")
    if os.path.exists(path):
        with open(path) as f:
            next(f)
            for line in f:
                s, t, tr, ev = line.strip().split(",")
                rows.append((int(s), int(t), float(tr), float(ev) if ev else None))
    info = {"step": rows[-1][0] if rows else 0, "tokens": rows[-1][1] if rows else 0,
            "cpu_seconds": SHIPPED_CPU_SECONDS}
    path = os.path.join(model_dir, "training.json")
    if os.path.exists(path):
        with open(path) as f:
            info.update({k: v for k, v in json.load(f).items() if k in info})
    return rows, info


def mix_at(mixes, k):
    """The families of chunk k under a run's mixes ([first chunk, families], ascending)."""
    fams = mixes[0][1]
    for first, f in mixes:
        if first <= k:
            fams = f
    return fams


def chunk_batches(split, seed, k, budget, block):
    """All documents of chunk k once, in length-bucketed batches whose order
    depends only on (seed, k)."""
    rng = np.random.default_rng([seed, k])
    lens = np.minimum(np.diff(split.offsets), block + 1)
    return T.bucket(rng.permutation(split.n), lens, budget, rng)


class Chunks:
    """The rolling corpus in DIR/chunks, made ahead by one child process at a time."""

    def __init__(self, run_dir, ndbg, programs, ahead, families):
        self.dir = os.path.join(run_dir, "chunks")
        self.tokenizer = os.path.join(run_dir, "tokenizer.json")
        self.heldout_raw = os.path.join(run_dir, "heldout", "raw")
        self.log = os.path.join(run_dir, "generate.log")
        self.ndbg, self.programs, self.ahead = ndbg, programs, ahead
        self.families = families  # chunk k -> its families
        self.proc, self.proc_k = None, None
        os.makedirs(self.dir, exist_ok=True)

    def path(self, k):
        return os.path.join(self.dir, f"chunk-{k:06d}")

    def _start(self, k):
        if not self.ndbg:
            raise RuntimeError(f"chunk {k} is missing from {self.dir} and no --ndbg was given to make it")
        tmp = os.path.join(self.dir, f".tmp-{k:06d}")
        shutil.rmtree(tmp, ignore_errors=True)
        q = lambda s: "'" + s.replace("'", "'\\''") + "'"  # noqa: E731
        script = (f"set -e; mkdir -p {q(tmp)}; "
                  f"{q(self.ndbg)} data --n {self.programs} --seed {CHUNK_SEED_BASE + k} --families {self.families(k)} "
                  f"--workers 1 --out {q(tmp)}/raw >/dev/null; "
                  f"{q(self.ndbg)} tokenize --tokenizer {q(self.tokenizer)} --train {q(tmp)}/raw "
                  f"--val {q(self.heldout_raw)} --out {q(tmp)}/tok >/dev/null; "
                  f"rm -rf {q(tmp)}/raw {q(tmp)}/tok/val.*; mv {q(tmp)}/tok {q(self.path(k))}; rmdir {q(tmp)}")
        log = open(self.log, "a")
        log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} chunk {k} (seed {CHUNK_SEED_BASE + k}, {self.families(k)})\n")
        log.flush()
        self.proc = subprocess.Popen(["bash", "-c", script], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        self.proc_k = k
        log.close()

    def _reap(self, block):
        if self.proc is None:
            return
        if not block and self.proc.poll() is None:
            return
        rc = self.proc.wait()
        k, self.proc, self.proc_k = self.proc_k, None, None
        if rc != 0:
            raise RuntimeError(f"making chunk {k} failed (exit {rc}); see {self.log}")

    def prefetch(self, k):
        """Starts making the first missing chunk of k+1 .. k+ahead, if none is being made."""
        self._reap(block=False)
        if self.proc is not None:
            return
        for j in range(k + 1, k + 1 + self.ahead):
            if not os.path.exists(self.path(j)):
                self._start(j)
                return

    def get(self, k):
        """Chunk k's directory, made now if need be; older chunks are deleted."""
        while not os.path.exists(self.path(k)):
            if self.proc is None:
                self._start(k)
            self._reap(block=True)  # ours, or another one first
        for name in os.listdir(self.dir):
            if name.startswith("chunk-") and int(name[6:]) < k:
                shutil.rmtree(os.path.join(self.dir, name), ignore_errors=True)
        self.prefetch(k)
        return self.path(k)

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait()
        self.proc = None


def prepare(run_dir, ndbg, source):
    """A run's files: the tokenizer (the vocabulary of the model a new run
    starts from, copied once) and the held-out split, made if missing."""
    if not os.path.exists(os.path.join(run_dir, "tokenizer.json")):
        shutil.copyfile(os.path.join(source, "tokenizer.json"), os.path.join(run_dir, "tokenizer.json"))
    held = os.path.join(run_dir, "heldout")
    if os.path.exists(os.path.join(held, "tok", "val.tokens")):
        return
    if not ndbg:
        raise RuntimeError(f"{held}/tok is missing and no --ndbg was given to make it")
    shutil.rmtree(held, ignore_errors=True)
    subprocess.run([ndbg, "data", "--n", str(HELDOUT_PROGRAMS), "--seed", str(HELDOUT_SEED),
                    "--families", SHORT_FAMILIES, "--workers", "1", "--out", os.path.join(held, "raw")],
                   check=True, stdout=subprocess.DEVNULL)
    raw = os.path.join(held, "raw")
    subprocess.run([ndbg, "tokenize", "--tokenizer", os.path.join(run_dir, "tokenizer.json"), "--train", raw,
                    "--val", raw, "--out", os.path.join(held, "tok")], check=True, stdout=subprocess.DEVNULL)
    for ext in ("tokens", "offsets", "prompt"):
        os.remove(os.path.join(held, "tok", "train." + ext))


class Run:
    """A run's model, weight average, optimizer and position; load and save."""

    def __init__(self, run_dir, settings, cfg):
        self.dir, self.s, self.cfg = run_dir, settings, cfg
        self.model = T.Llama(cfg)
        self.ema = T.Llama(cfg)
        self.ema.requires_grad_(False)
        self.opt = T.make_optimizer(self.model, settings["lr"], settings["weight_decay"], torch.device("cpu"))
        self.step = self.step0 = 0
        self.tokens = 0
        self.cpu_seconds = 0.0
        self.chunk = self.batch = 0
        self.rows, self.ema_evals = [], []

    @property
    def ckpt(self):
        return os.path.join(self.dir, "ckpt.pt")

    def save(self):
        state = {"settings": self.s, "cfg": self.cfg, "model": self.model.state_dict(), "ema": self.ema.state_dict(),
                 "opt": self.opt.state_dict(), "step": self.step, "step0": self.step0, "tokens": self.tokens,
                 "cpu_seconds": self.cpu_seconds, "chunk": self.chunk, "batch": self.batch, "rows": self.rows,
                 "ema_evals": self.ema_evals, "torch_rng": torch.get_rng_state(),
                 "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        torch.save(state, self.ckpt + ".tmp")
        os.replace(self.ckpt + ".tmp", self.ckpt)

    @classmethod
    def load(cls, run_dir):
        ck = torch.load(os.path.join(run_dir, "ckpt.pt"))
        r = cls(run_dir, ck["settings"], ck["cfg"])
        r.model.load_state_dict(ck["model"])
        r.ema.load_state_dict(ck["ema"])
        r.opt.load_state_dict(ck["opt"])
        for k in ("step", "step0", "tokens", "cpu_seconds", "chunk", "batch", "rows", "ema_evals"):
            setattr(r, k, ck[k])
        torch.set_rng_state(ck["torch_rng"])
        return r

    @classmethod
    def start(cls, run_dir, settings, source):
        """A new run from the export in source, at settings' block."""
        cfg, sd = T.load_export(source)
        cfg["max_position_embeddings"] = settings["block"]
        r = cls(run_dir, settings, cfg)
        r.model.load_state_dict(sd)
        r.ema.load_state_dict(sd)
        r.rows, info = shipped_history(source)
        # Where the run came from, for the model card: the source's step and
        # tokens, and its GPU time when it was the GPU run's model.
        origin = {"path": os.path.abspath(source), "step": info["step"], "tokens": info["tokens"]}
        path = os.path.join(source, "training.json")
        if os.path.exists(path):
            with open(path) as f:
                t = json.load(f)
            origin.update({k: t[k] for k in ("gpu_seconds", "gpu", "params") if t.get(k) is not None})
        r.s["from"] = origin
        r.step = r.step0 = info["step"]
        r.tokens, r.cpu_seconds = info["tokens"], info["cpu_seconds"]
        r.chunk = r.batch = 0
        return r

    def follow_mix(self, chunks_dir):
        """Makes FAMILIES the run's mix from the first chunk after the current
        one that is not on disk (chunks made ahead keep the mix they were
        made with); a run from before mixes were recorded had SHORT_FAMILIES.
        Returns the chunk the new mix starts at, or None when it is the run's."""
        mixes = self.s.setdefault("mixes", [[0, SHORT_FAMILIES]])
        if mixes[-1][1] == FAMILIES:
            return None
        k = self.chunk + 1
        while os.path.exists(os.path.join(chunks_dir, f"chunk-{k:06d}")):
            k += 1
        mixes.append([k, FAMILIES])
        return k

    def best(self):
        """The weights export should write: the average when its last held-out loss is lower."""
        last = next((row for row in reversed(self.rows) if row[3] is not None and row[0] > self.step0), None)
        ema = self.ema_evals[-1] if self.ema_evals else None
        if ema is not None and last is not None and ema[0] == last[0] and ema[1] < last[3]:
            return self.ema, "average", ema[1]
        return self.model, "last", last[3] if last else None


def lr_at(step, s, left=None, cooldown=0):
    """The learning rate of the run's step-th step since this start (s its
    settings): the warmup, then constant; in a cooldown of cooldown steps
    with left of them still to take (this one included), scaled by
    left / cooldown: the last step takes 1/cooldown of the rate."""
    lr = s["lr"] * min(1.0, (step + 1) / s["warmup"])
    if cooldown:
        lr *= left / cooldown
    return lr


def train(args):
    os.makedirs(args.run_dir, exist_ok=True)
    torch.set_num_threads(args.threads)
    T.tune_malloc()
    stop = {"signal": None}

    def on_signal(signum, _frame):
        stop["signal"] = signum
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    pid_path = os.path.join(args.run_dir, "pid")
    atomic_write(pid_path, f"{os.getpid()}\n")
    resume = os.path.exists(os.path.join(args.run_dir, "ckpt.pt"))
    if resume and not os.path.exists(os.path.join(args.run_dir, "tokenizer.json")):
        raise RuntimeError(f"{args.run_dir} has a checkpoint but no tokenizer.json: its vocabulary is unknown")
    prepare(args.run_dir, args.ndbg, args.source)
    if resume:
        run = Run.load(args.run_dir)
        print(f"resumed at step {run.step}, chunk {run.chunk} batch {run.batch}, {run.tokens:,} tokens, "
              f"{run.cpu_seconds / 3600:.2f} CPU-hours", flush=True)
    else:
        settings = {k: getattr(args, k) for k in ("block", "lr", "warmup", "weight_decay", "clip", "batch_tokens",
                                                  "programs", "seed", "ema", "eval_every")}
        settings["mixes"] = [[0, FAMILIES]]
        torch.manual_seed(settings["seed"])
        run = Run.start(args.run_dir, settings, args.source)
        print(f"new run from {args.source} at step {run.step}, {run.tokens:,} tokens; settings {json.dumps(settings)}",
              flush=True)
    s = run.s
    with open(os.path.join(args.run_dir, "heldout", "tok", "meta.json")) as f:
        pad_id = json.load(f)["pad_id"]
    heldout = T.Split(os.path.join(args.run_dir, "heldout", "tok"), "val")
    eval_args = argparse.Namespace(eval_batches=8, batch_size=16, block=s["block"])
    first = run.follow_mix(os.path.join(args.run_dir, "chunks"))
    if first is not None:
        print(f"data mix from chunk {first} on: {FAMILIES}", flush=True)
    chunks = Chunks(args.run_dir, args.ndbg, s["programs"], args.ahead, lambda k: mix_at(s["mixes"], k))
    try:
        split = T.Split(chunks.get(run.chunk), "train")
        batches = chunk_batches(split, s["seed"], run.chunk, s["batch_tokens"], s["block"])
        cpu0, kids0 = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_base = run.cpu_seconds

        def account():
            kids = resource.getrusage(resource.RUSAGE_CHILDREN)
            run.cpu_seconds = (cpu_base + time.process_time() - cpu0 + kids.ru_utime - kids0.ru_utime
                               + kids.ru_stime - kids0.ru_stime)

        t_ckpt = t_log = time.time()
        saved = None  # when this process last wrote the checkpoint
        end = args.max_steps
        if args.cooldown:
            end = run.step + args.cooldown
            s.setdefault("cooldowns", []).append([run.step, args.cooldown])
            print(f"cooldown: the learning rate falls linearly over steps {run.step + 1}-{end}", flush=True)
        tok_log, cpu_log = run.tokens, time.process_time()
        while stop["signal"] is None and not (end and run.step >= end):
            if run.batch >= len(batches):
                run.chunk, run.batch = run.chunk + 1, 0
                split = T.Split(chunks.get(run.chunk), "train")
                batches = chunk_batches(split, s["seed"], run.chunk, s["batch_tokens"], s["block"])
            for g in run.opt.param_groups:
                g["lr"] = lr_at(run.step - run.step0, s, end - run.step, args.cooldown)
            x, y, m = split.rows(batches[run.batch], s["block"], pad_id)
            loss = T.masked_loss(run.model, x, y, m)
            run.opt.zero_grad(set_to_none=True)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(run.model.parameters(), s["clip"])
            run.opt.step()
            with torch.no_grad():
                for pe, p in zip(run.ema.parameters(), run.model.parameters()):
                    pe.lerp_(p, 1.0 - s["ema"])
            run.step += 1
            run.batch += 1
            run.tokens += int(m.sum().item())
            ev = None
            if (run.step - run.step0) % s["eval_every"] == 0 or (args.cooldown and run.step == end):
                ev = T.evaluate(run.model, heldout, eval_args, torch.device("cpu"), pad_id)
                run.ema_evals.append((run.step, T.evaluate(run.ema, heldout, eval_args, torch.device("cpu"), pad_id)))
            run.rows.append((run.step, run.tokens, loss.item(), ev))
            if run.step % args.log_every == 0 or ev is not None:
                account()
                now, cpu = time.time(), time.process_time()
                tps = (run.tokens - tok_log) / max(now - t_log, 1e-9)
                tpc = (run.tokens - tok_log) / max(cpu - cpu_log, 1e-9)
                t_log, tok_log, cpu_log = now, run.tokens, cpu
                evs = f" held-out {ev:.4f} (average {run.ema_evals[-1][1]:.4f})" if ev is not None else ""
                print(f"step {run.step} loss {loss.item():.4f}{evs} norm {norm:.2f} chunk {run.chunk} "
                      f"tokens {run.tokens:,} {tps:,.0f} tok/s {tpc:,.0f} tok/CPU-s "
                      f"{run.cpu_seconds / 3600:.2f} CPU-h", flush=True)
                atomic_write(os.path.join(args.run_dir, "progress.json"), json.dumps({
                    "step": run.step, "tokens": run.tokens, "cpu_seconds": round(run.cpu_seconds, 1),
                    "chunk": run.chunk, "loss": round(loss.item(), 4), "tokens_per_s": round(tps),
                    "tokens_per_cpu_s": round(tpc), "block": s["block"],
                    "last_checkpoint": saved,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
            if time.time() - t_ckpt >= args.ckpt_minutes * 60:
                account()
                run.save()
                t_ckpt = time.time()
                saved = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t_ckpt))
        account()
        run.save()
        why = f"signal {stop['signal']}" if stop["signal"] is not None else f"step {run.step}"
        print(f"stopped ({why}): checkpoint at step {run.step}, {run.tokens:,} tokens, "
              f"{run.cpu_seconds / 3600:.2f} CPU-hours", flush=True)
    finally:
        chunks.close()
        try:
            if open(pid_path).read().strip() == str(os.getpid()):
                os.remove(pid_path)
        except OSError:
            pass


def export_run(args):
    """Writes the Go engine's files for the run's checkpoint into args.out,
    plus loss.csv and training.json (step, tokens, CPU-seconds, which weights)."""
    run = Run.load(args.run_dir)
    model, which, heldout = run.best()
    os.makedirs(args.out, exist_ok=True)
    T.export(model, run.cfg, 15, os.path.join(args.run_dir, "tokenizer.json"), args.out, torch.bfloat16)
    with open(os.path.join(args.out, "loss.csv"), "w") as f:
        f.write("step,tokens,train_loss,heldout_loss\n")
        for r in run.rows:
            f.write(f"{r[0]},{r[1]},{r[2]:.5f},{'' if r[3] is None else f'{r[3]:.5f}'}\n")
    info = {"step": run.step, "tokens": run.tokens, "cpu_seconds": round(run.cpu_seconds, 1), "weights": which,
            "heldout_loss": heldout, "settings": run.s, "params": sum(p.numel() for p in model.parameters())}
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump(info, f, indent=1)
    print(f"exported step {run.step} ({which} weights, held-out loss {heldout}) to {args.out}")


# What rebase leaves in place: the binary, the log (it goes on), the pid
# file (checked: the trainer must be stopped) and earlier runs.
REBASE_KEEP = ("ndbg", "train.log", "pid")


def rebase(args):
    """Moves the run's state into RUN_DIR/previous-<time>/ (see the module
    doc); refuses while a trainer runs in it."""
    run = args.run_dir
    pid_path = os.path.join(run, "pid")
    if os.path.exists(pid_path):
        try:
            pid = int(open(pid_path).read().strip())
            os.kill(pid, 0)
        except (ValueError, ProcessLookupError, PermissionError):
            pass
        else:
            sys.exit(f"continuous.py rebase: a trainer (pid {pid}) runs in {run}: stop it first (train/continue.sh stop)")
    moved = [n for n in sorted(os.listdir(run)) if n not in REBASE_KEEP and not n.startswith("previous-")]
    if not moved:
        print(f"{run}: no run to move aside")
        return
    dest = os.path.join(run, "previous-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    os.makedirs(dest)
    for n in moved:
        os.replace(os.path.join(run, n), os.path.join(dest, n))
    print(f"moved the previous run ({', '.join(moved)}) to {dest}; the next start begins a new run")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="train, resuming the run in --run-dir if it has a checkpoint")
    r.add_argument("--run-dir", required=True)
    r.add_argument("--ndbg", default="", help="the ndbg binary that makes the data")
    r.add_argument("--from", dest="source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "..", "weights", "default"),
                   help="export a new run starts from (default weights/default)")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--ckpt-minutes", type=float, default=10)
    r.add_argument("--log-every", type=int, default=10)
    r.add_argument("--ahead", type=int, default=1, help="chunks made ahead of the one in training")
    r.add_argument("--max-steps", type=int, default=0, help="stop (with a checkpoint) at this step (0: never)")
    r.add_argument("--cooldown", type=int, default=0,
                   help="end the run: the learning rate falls linearly over this many more steps (the last at "
                        "1/N of it), the held-out loss is measured after the last, and the run stops there (instead "
                        "of --max-steps; run it on a copy of the run directory)")
    g = r.add_argument_group("settings of a new run (a resumed run keeps its own)")
    g.add_argument("--block", type=int, default=2048)
    g.add_argument("--lr", type=float, default=1e-3)
    g.add_argument("--warmup", type=int, default=100)
    g.add_argument("--weight-decay", type=float, default=0.1)
    g.add_argument("--clip", type=float, default=1.0)
    g.add_argument("--batch-tokens", type=int, default=8192)
    g.add_argument("--programs", type=int, default=1000, help="programs per chunk")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--ema", type=float, default=0.999, help="decay of the weight average")
    g.add_argument("--eval-every", type=int, default=200)
    e = sub.add_parser("export", help="write the checkpoint as a model directory the Go engine loads")
    e.add_argument("--run-dir", required=True)
    e.add_argument("--out", required=True)
    b = sub.add_parser("rebase", help="move the run's state aside, so the next run starts anew from --from")
    b.add_argument("--run-dir", required=True)
    args = ap.parse_args()
    if args.cmd == "run" and args.cooldown < 0:
        ap.error(f"--cooldown {args.cooldown}: want a number of steps, at least 1 (0: none)")
    if args.cmd == "run" and args.cooldown and args.max_steps:
        ap.error("--cooldown and --max-steps: give one (a cooldown ends the run by itself)")
    if args.cmd == "run":
        train(args)
    elif args.cmd == "rebase":
        rebase(args)
    else:
        export_run(args)


if __name__ == "__main__":
    sys.exit(main())
