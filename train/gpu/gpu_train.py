#!/usr/bin/env python3
"""The GPU run's trainer (train/gpu/run.sh starts it; train/gpu/RUN.md says how).

Trains train.py's LLaMA from scratch until a wall-clock deadline, on chunks of
tokenized trajectories that appear in --data while it runs (carried ones,
and those train/gpu/datagen.py makes on the machine's other cores), and keeps
the newest checkpoint in --out as the Go engine loads it: sharded
safetensors (BF16, each file under --shard-mib), index, config.json,
tokenizer.json. Every file there is replaced whole (outbox.place), so a kill
at any moment leaves a loadable checkpoint once the first one is written.

  gpu_train.py --data DIR --heldout DIR --tokenizer FILE --out OUT/model --report DIR
               --deadline EPOCH_SECONDS [--layers 8 --hidden 512 ...]

What it does, in order:
  1. device checks: which GPU, its nominal BF16 peak; a large BF16 matrix
     product (the measured peak); the fused attention against train.py's
     blocked one on the device (both directions: values and gradients):
     a mismatch turns the fused kernel off for the run;
  2. the model (bf16 autocast over F32 weights, fused AdamW on CUDA), and
     torch.compile when --compile allows and it works: the first compiled
     step runs under --compile-timeout, and any failure falls back to the
     eager model (same parameters) for the rest of the run;
  3. training: length-bucketed batches of about --batch-tokens tokens
     (each row one trajectory from its start, padded to a multiple of 64),
     loss on the frames only (train.masked_loss), learning rate warmed up
     over --warmup steps then a cosine over the time left to the deadline;
     a held-out loss and an export every --export-every seconds (the
     first after --first-export); a non-finite loss stops training and
     keeps the last good export;
  4. at the deadline, or on SIGTERM/SIGINT: a last held-out loss and the
     final export, then the report: loss.csv (step, tokens, train loss,
     held-out loss: continuous.py's format, so the CPU trainer continues
     the curve), curve.csv (time, tokens/s, MFU, learning rate),
     evals.csv (the held-out loss against model FLOPs, at every export),
     training.json (tokens, throughput, MFU, data, settings) and the log,
     packed into --report-out (outbox.pack).

Data: every chunk's meta.json must name the Python version --python-version
names (traces differ between versions: train/README.md); others are
skipped and counted. Chunks are taken oldest name first, each once; a chunk
is marked consumed (a .consumed file, which datagen.py counts); when no new
one is there, the least used is taken again (counted as repeated tokens).
"""
import argparse
import json
import math
import os
import queue
import shutil
import signal
import sys
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import outbox  # noqa: E402
import train as T  # noqa: E402

# Nominal dense BF16 tensor-core peaks (datasheets, FLOP/s), first match on
# torch.cuda.get_device_name(); MFU is also given against the measured
# matrix-product rate, which on these machines is about 80% of nominal.
NOMINAL_PEAKS = (("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989e12), ("H200", 989e12), ("GH200", 989e12),
                 ("A100", 312e12), ("L40S", 362e12), ("A10", 125e12))
WIDTH_MULTIPLE = 64  # batch widths are padded to this: fewer shapes for torch.compile


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


class Stop:
    """The deadline, and SIGTERM/SIGINT (run.sh's timeout, or a user)."""

    def __init__(self, deadline):
        self.deadline = deadline
        self.signal = None
        signal.signal(signal.SIGTERM, self._on)
        signal.signal(signal.SIGINT, self._on)

    def _on(self, signum, _frame):
        self.signal = signum

    def left(self):
        return self.deadline - time.time()

    def now(self):
        return self.signal is not None or self.left() <= 0


class Feed:
    """Batches from the chunks in data_dir, in a background thread."""

    def __init__(self, data_dir, python_version, pad_id, vocab, batch_tokens, block, seed, device, prefetch=4):
        self.dir, self.python, self.pad_id, self.vocab = data_dir, python_version, pad_id, vocab
        self.budget, self.block, self.device = batch_tokens, block, device
        self.rng = np.random.default_rng(seed)
        self.uses = {}  # chunk name -> times taken
        self.skipped = {}  # chunk name -> why
        self.stats = {"chunks_fresh": 0, "chunks_repeated": 0, "tokens_fresh": 0, "tokens_repeated": 0}
        self.q = queue.Queue(maxsize=prefetch)
        self.error = None
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _chunks(self):
        try:
            names = sorted(n for n in os.listdir(self.dir) if n.startswith("chunk-"))
        except OSError:
            return []
        return [n for n in names if n not in self.skipped and os.path.exists(os.path.join(self.dir, n, "meta.json"))]

    def _accept(self, name):
        with open(os.path.join(self.dir, name, "meta.json")) as f:
            meta = json.load(f)
        py = str(meta.get("python", ""))
        if not (py == self.python or py.startswith(self.python + ".")):
            return f"traced by Python {py or '?'}, not {self.python}"
        if meta.get("vocab_size") != self.vocab or meta.get("pad_id") != self.pad_id:
            return f"vocabulary {meta.get('vocab_size')}/pad {meta.get('pad_id')}, not {self.vocab}/{self.pad_id}"
        return None

    def _next_chunk(self):
        """The oldest chunk never taken; else, after a short wait for the
        generator, the least taken one."""
        for attempt in range(2):
            for name in self._chunks():
                if name in self.uses:
                    continue
                why = self._accept(name)
                if why:
                    self.skipped[name] = why
                    log(f"data: skipping {name}: {why}")
                    continue
                return name, True
            if attempt == 0:
                time.sleep(0.5)
        used = [n for n in self._chunks() if n in self.uses]
        if not used:
            raise RuntimeError(f"no usable chunk in {self.dir} (skipped: {self.skipped})")
        return min(used, key=lambda n: (self.uses[n], n)), False

    def _run(self):
        try:
            while not self.closed:
                name, fresh = self._next_chunk()
                self.uses[name] = self.uses.get(name, 0) + 1
                path = os.path.join(self.dir, name)
                if fresh:
                    open(os.path.join(path, ".consumed"), "w").close()
                split = T.Split(path, "train")
                lens = np.minimum(np.diff(split.offsets), self.block + 1)
                key = "fresh" if fresh else "repeated"
                self.stats[f"chunks_{key}"] += 1
                for docs in T.bucket(self.rng.permutation(split.n), lens, self.budget, self.rng):
                    if self.closed:
                        return
                    x, y, m = split.rows(docs, self.block, self.pad_id)
                    self.stats[f"tokens_{key}"] += int(m.sum())
                    self.q.put(self._pad(x, y, m, lens[docs]))
        except BaseException as e:  # handed to the trainer, which stops on it
            self.error = e
            self.q.put(None)

    def _pad(self, x, y, m, lens):
        """Widths padded to WIDTH_MULTIPLE (pad tokens, no loss), pinned for
        an asynchronous copy; with the batch's model-FLOP counts."""
        w = x.shape[1]
        pad = (-w) % WIDTH_MULTIPLE
        if pad:
            x = F.pad(x, (0, pad), value=self.pad_id)
            y = F.pad(y, (0, pad), value=self.pad_id)
            m = F.pad(m, (0, pad), value=0.0)
        real = np.maximum(lens.astype(np.int64) - 1, 0)  # input positions that are tokens, not padding
        info = {"tokens": int(real.sum()), "pairs": int((real * (real + 1) // 2).sum()), "kept": int(m.sum()),
                "padded": int(x.numel())}
        if self.device.type == "cuda":
            x, y, m = x.pin_memory(), y.pin_memory(), m.pin_memory()
        return x, y, m, info

    def get(self):
        b = self.q.get()
        if b is None:
            raise RuntimeError(f"the data feed failed: {self.error!r}") from self.error
        return b

    def close(self):
        self.closed = True
        try:
            while True:
                self.q.get_nowait()
        except queue.Empty:
            pass


def nominal_peak(name):
    for key, peak in NOMINAL_PEAKS:
        if key.lower() in name.lower():
            return peak
    return None


def measured_matmul(device):
    """FLOP/s of a BF16 8192^3 product (median of 10 after 3 warm-ups)."""
    n = 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        a @ b
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    del a, b
    return 2 * n ** 3 / sorted(times)[len(times) // 2]


def check_fused_attention(device):
    """Compares train.fused_causal_attention with train.causal_attention on
    the device: F32 values and gradients, and BF16 values against F32.
    Returns (ok, text)."""
    if not hasattr(F, "scaled_dot_product_attention"):
        return False, "torch has no scaled_dot_product_attention"
    g = torch.Generator(device="cpu").manual_seed(7)
    q, k, v = (torch.randn(2, 4, 300, 64, generator=g).to(device).requires_grad_() for _ in range(3))
    bias = torch.full((300, 300), float("-inf"), device=device).triu(1)
    prev = torch.backends.cuda.matmul.allow_tf32 if device.type == "cuda" else None
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        ref = T.causal_attention(q, k, v, bias)
        got = T.fused_causal_attention(q, k, v)
        gv = torch.randn(ref.shape, generator=g).to(device)
        dref = torch.autograd.grad((ref * gv).sum(), (q, k, v))
        dgot = torch.autograd.grad((got * gv).sum(), (q, k, v))
        err = float((got - ref).abs().max())
        gerr = max(float((a - b).abs().max()) for a, b in zip(dgot, dref))
        bf = T.fused_causal_attention(*(t.detach().bfloat16() for t in (q, k, v))).float()
        rel = float((bf - ref).norm() / ref.norm())
    finally:
        if device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = prev
    ok = err < 1e-4 and gerr < 1e-3 and rel < 2e-2
    return ok, f"F32 max |fused - blocked| {err:.2e} (gradients {gerr:.2e}), BF16 relative error {rel:.2e}"


def plan_files(cfg, shard_mib):
    """The model files an export writes and their sizes in bytes, without
    writing them (the same greedy split as train.export)."""
    h, f, v, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    kv = cfg["num_key_value_heads"] * cfg["head_dim"]
    q = cfg["num_attention_heads"] * cfg["head_dim"]
    sizes = [v * h]
    for _ in range(n):
        sizes += [q * h, kv * h, kv * h, h * q, f * h, f * h, h * f, h, h]
    sizes.append(h)
    if not cfg["tie_word_embeddings"]:
        sizes.append(v * h)
    limit = int(shard_mib * 2 ** 20)
    shards, cur = [], 0
    for s in (x * 2 for x in sizes):  # BF16
        if cur and cur + s > limit:
            shards.append(cur)
            cur = 0
        cur += s
    shards.append(cur)
    return shards


def model_config(args, meta):
    heads = args.heads
    return {
        "vocab_size": meta["vocab_size"], "hidden_size": args.hidden,
        "intermediate_size": args.ffn or (int(args.hidden * 8 / 3) + 63) // 64 * 64,
        "num_hidden_layers": args.layers, "num_attention_heads": heads,
        "num_key_value_heads": args.kv_heads or heads, "head_dim": args.hidden // heads,
        "max_position_embeddings": args.block, "rms_norm_eps": 1e-5, "rope_theta": args.rope_theta,
        "tie_word_embeddings": False, "bos_token_id": meta["bos_id"], "eos_token_id": meta["eos_id"],
    }


class CompileTimeout(Exception):
    pass


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder of chunk-* token folders (ndbg tokenize's train split)")
    ap.add_argument("--heldout", required=True, help="ndbg tokenize folder whose val split is the held-out loss")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="the checkpoint folder (OUT/model)")
    ap.add_argument("--report", required=True, help="folder for loss.csv, curve.csv, training.json")
    ap.add_argument("--report-out", default="", help="the report folder packed here (.tar.gz) at every export")
    ap.add_argument("--deadline", type=float, required=True, help="time.time() at which training stops")
    ap.add_argument("--train-seconds", type=float, default=0,
                    help="also stop this long after the first step (tiny runs, whose start-up time varies)")
    ap.add_argument("--python-version", required=True, help="the Python version every chunk must be traced by")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=0)
    ap.add_argument("--ffn", type=int, default=0, help="0: about 8/3 hidden, rounded to 64")
    ap.add_argument("--block", type=int, default=2048)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--batch-tokens", type=int, default=131072)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=150, help="steps of linear warmup")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--export-every", type=float, default=75.0, help="seconds between exports")
    ap.add_argument("--first-export", type=float, default=30.0, help="seconds of training before the first export")
    ap.add_argument("--export-margin", type=float, default=20.0,
                    help="no periodic export this close to the deadline (the final one follows)")
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--eval-rows", type=int, default=32)
    ap.add_argument("--log-every", type=float, default=10.0, help="seconds between progress lines")
    ap.add_argument("--shard-mib", type=float, default=15.0)
    ap.add_argument("--max-model-files", type=int, default=7,
                    help="files the export may have (shards, index, config, tokenizer): the 8 that come back, less the report")
    ap.add_argument("--compile", choices=["auto", "on", "off"], default="auto",
                    help="torch.compile: auto = on a GPU when torch has it, falling back to eager on any failure")
    ap.add_argument("--compile-timeout", type=float, default=150.0, help="seconds the first compiled step may take")
    ap.add_argument("--attention", choices=["auto", "fused", "blocked"], default="auto",
                    help="fused: scaled_dot_product_attention; auto: fused where torch has it and it passes the check")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (CPU runs only; 0: torch's default)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    stop = Stop(args.deadline)
    t_start = time.time()
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          (args.device if args.device != "auto" else "cpu"))
    if device.type == "cpu" and args.threads:
        torch.set_num_threads(args.threads)
    if device.type == "cpu":
        T.tune_malloc()
    os.makedirs(args.report, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    info = {"torch": torch.__version__, "python": sys.version.split()[0], "device": str(device)}
    log(f"torch {torch.__version__} on {device}; {stop.left():.0f} s to the deadline")

    with open(os.path.join(args.heldout, "meta.json")) as f:
        meta = json.load(f)
    cfg = model_config(args, meta)
    shards = plan_files(cfg, args.shard_mib)
    nfiles = len(shards) + (1 if len(shards) > 1 else 0) + 2
    if nfiles > args.max_model_files or max(shards) > outbox.MAX_FILE_BYTES:
        sys.exit(f"gpu_train: the export would be {nfiles} files, the largest {max(shards):,} bytes "
                 f"(at most {args.max_model_files} files of {outbox.MAX_FILE_BYTES:,}): a smaller model or --shard-mib")
    info["export_plan"] = {"files": nfiles, "shard_bytes": shards}

    # 1. device checks
    peak_nominal = peak_measured = None
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        peak_nominal = nominal_peak(name)
        try:
            peak_measured = measured_matmul(device)
        except Exception as e:  # a report, not a reason to stop
            log(f"matmul measurement failed: {e!r}")
        info.update({"gpu": name, "capability": list(torch.cuda.get_device_capability(device)),
                     "peak_nominal_tflops": peak_nominal and peak_nominal / 1e12,
                     "matmul_tflops_measured": peak_measured and round(peak_measured / 1e12, 1)})
        log(f"GPU {name}: nominal BF16 peak {peak_nominal and peak_nominal / 1e12} TFLOP/s, "
            f"measured 8192^3 product {peak_measured and peak_measured / 1e12:.0f} TFLOP/s")
    if args.attention == "blocked":
        T.USE_FUSED_ATTENTION = False
        info["attention"] = "blocked (asked)"
    elif not hasattr(F, "scaled_dot_product_attention"):
        T.USE_FUSED_ATTENTION = False
        info["attention"] = f"blocked (train.causal_attention): torch {torch.__version__} has no fused attention"
        log(info["attention"])
    else:
        ok, text = check_fused_attention(device)
        log(f"fused attention check on {device}: {'passed' if ok else 'FAILED'}: {text}")
        if ok:
            T.USE_FUSED_ATTENTION = True
            info["attention"] = f"fused scaled_dot_product_attention ({text})"
        else:
            if args.attention == "fused":
                sys.exit("gpu_train: --attention fused, but the fused kernel failed its check")
            T.USE_FUSED_ATTENTION = False
            info["attention"] = f"blocked (train.causal_attention): the fused check failed: {text}"

    # 2. model
    torch.manual_seed(args.seed)
    model = T.Llama(cfg).to(device)
    params = sum(p.numel() for p in model.parameters())
    body = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear)) - model.lm_head.weight.numel()
    head = model.lm_head.weight.numel()
    opt = T.make_optimizer(model, args.lr, args.weight_decay, device)
    info.update({"params": params, "config": cfg})
    log(f"model: {params:,} parameters ({body + head:,} in products), {nfiles} export files "
        f"({', '.join(f'{s / 2**20:.1f}' for s in shards)} MiB of weights)")
    net, compiled = model, "off"
    if device.type == "cuda" and args.compile != "off" and not T.USE_FUSED_ATTENTION:
        # The blocked attention loops over the width in Python: compiled, it
        # would recompile for every batch width.
        compiled = "off: the blocked attention does not compile to one graph"
    elif device.type == "cuda" and args.compile != "off" and hasattr(torch, "compile"):
        try:
            net, compiled = torch.compile(model, dynamic=True), "pending"
        except Exception as e:
            compiled = f"failed at torch.compile: {e!r}"
            log(f"torch.compile failed ({e!r}): eager")
    elif args.compile == "on":
        compiled = "unavailable (no GPU or no torch.compile)"

    with open(os.path.join(args.heldout, "meta.json")) as f:
        pad_id = json.load(f)["pad_id"]
    heldout = T.Split(args.heldout, "val")
    feed = Feed(args.data, args.python_version, pad_id, cfg["vocab_size"], args.batch_tokens, args.block, args.seed,
                device)
    eval_args = argparse.Namespace(eval_batches=args.eval_batches, batch_size=args.eval_rows, block=args.block)

    stage, same_fs = outbox.pick_stage(os.path.dirname(os.path.abspath(args.out)))
    rows, curve, evals = [], [], []  # loss.csv, curve.csv and evals.csv rows
    state = {"step": 0, "tokens": 0, "flops": 0.0, "seen": 0, "padded": 0, "exports": 0, "last_export": None,
             "heldout": None, "stopped": "", "train_start": None, "train_seconds": 0.0, "last_loss": float("nan"),
             "export_step": 0, "export_tokens": 0, "rate_seen": 0, "rate_tokens": 0,
             "flops_all": 0.0}

    def write_report(final):
        with open(os.path.join(args.report, "loss.csv"), "w") as f:
            f.write("step,tokens,train_loss,heldout_loss\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]:.5f},{'' if r[3] is None else f'{r[3]:.5f}'}\n")
        with open(os.path.join(args.report, "curve.csv"), "w") as f:
            f.write("seconds,step,tokens,tokens_per_s,loss_tokens_per_s,tflops,mfu_nominal,mfu_measured,lr,loss\n")
            for c in curve:
                f.write(",".join(str(v) for v in c) + "\n")
        with open(os.path.join(args.report, "evals.csv"), "w") as f:
            f.write("step,loss_tokens,tokens,model_flops,train_seconds,heldout_loss\n")
            for e in evals:
                f.write(",".join(str(v) for v in e) + "\n")
        secs = max(state["train_seconds"], 1e-9)
        rate = state["flops"] / secs
        rec = {
            # step, tokens and heldout_loss describe the exported weights
            # (continuous.py and promote.py read them); the *_trained fields
            # the training, which a non-finite stop can take past the export.
            "step": state["export_step"], "tokens": state["export_tokens"], "cpu_seconds": 0.0,
            "steps_trained": state["step"], "loss_tokens_trained": state["tokens"],
            "gpu_seconds": round(state["train_seconds"], 1) if device.type == "cuda" else None, "weights": "last",
            "train_seconds": round(state["train_seconds"], 1),
            "heldout_loss": state["heldout"], "params": params, "final": final, "stopped": state["stopped"],
            "tokens_processed": state["seen"], "tokens_padded": state["padded"],
            "tokens_per_s": round(state["rate_seen"] / secs), "loss_tokens_per_s": round(state["rate_tokens"] / secs),
            "model_tflops_per_s": round(rate / 1e12, 2),
            "mfu_nominal": peak_nominal and round(rate / peak_nominal, 4),
            "mfu_measured": peak_measured and round(rate / peak_measured, 4),
            "compile": compiled, "data": {**feed.stats, "skipped": feed.skipped, "python": args.python_version},
            "exports": state["exports"], "wall_seconds": round(time.time() - t_start, 1),
            "settings": {k: getattr(args, k) for k in ("layers", "hidden", "heads", "block", "batch_tokens", "lr",
                                                      "min_lr_ratio", "warmup", "weight_decay", "clip", "seed")},
            **info,
        }
        with open(os.path.join(args.report, "training.json"), "w") as f:
            json.dump(rec, f, indent=1)
        if args.report_out:
            outbox.pack(args.report, args.report_out, stage, same_fs)

    def export(final=False):
        """The checkpoint into OUT; False (and nothing written) when the
        weights are no longer finite, so the last good export stays."""
        if state["step"] == 0:
            return True
        t0 = time.time()
        with torch.no_grad():
            finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
        if not finite:
            state["stopped"] = f"non-finite weights at step {state['step']}"
            log(f"STOP: {state['stopped']}; the last export stays")
            return False
        ev = T.evaluate(model, heldout, eval_args, device, pad_id)
        state["heldout"] = ev
        if rows and rows[-1][0] == state["step"]:
            rows[-1] = (*rows[-1][:3], ev)
        else:
            rows.append((state["step"], state["tokens"], state["last_loss"], ev))
        evals.append((state["step"], state["tokens"], state["seen"], f"{state['flops_all']:.4g}",
                      round(state["train_seconds"], 1), round(ev, 5)))
        for n in os.listdir(stage):
            os.remove(os.path.join(stage, n))
        names = T.export(model, cfg, args.shard_mib, args.tokenizer, stage, torch.bfloat16,
                         metadata={"step": state["step"], "tokens": state["tokens"]})
        # Shards first, the index last: config.json and the index name the
        # new step only once every shard is in place.
        names.sort(key=lambda n: (n.endswith(".json"), n == "model.safetensors.index.json"))
        outbox.place(stage, same_fs, names, args.out)
        state["exports"] += 1
        state["last_export"] = time.time()
        state["export_step"], state["export_tokens"] = state["step"], state["tokens"]
        write_report(final)
        log(f"export {state['exports']}{' (final)' if final else ''}: step {state['step']}, "
            f"{state['tokens']:,} loss tokens, held-out loss {ev:.4f}, {time.time() - t0:.1f} s")
        return True

    def lr_at(step, now):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        t0 = state["train_start"] or now
        p = min(1.0, max(0.0, (now - t0) / max(stop.deadline - t0, 1e-9)))
        return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))

    def step_once(net, x, y, m):
        with T.autocast(device):
            loss = T.masked_loss(net, x, y, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        return loss, norm

    def on_alarm(_s, _f):
        raise CompileTimeout()

    log(f"training until {time.strftime('%H:%M:%S', time.localtime(args.deadline))} "
        f"({stop.left():.0f} s), batches of about {args.batch_tokens:,} tokens")
    t_log = time.time()
    win = {"seen": 0, "tokens": 0, "flops": 0.0, "t": time.time()}
    loss_acc, loss_n = None, 0
    try:
        while not stop.now():
            x, y, m, binfo = feed.get()
            x, y, m = (t.to(device, non_blocking=True) for t in (x, y, m))
            lr = lr_at(state["step"], time.time())
            for g in opt.param_groups:
                g["lr"] = lr
            if compiled == "pending":
                t_c = time.time()
                old = signal.signal(signal.SIGALRM, on_alarm)
                signal.setitimer(signal.ITIMER_REAL, max(1.0, min(args.compile_timeout, stop.left())))
                try:
                    loss, norm = step_once(net, x, y, m)
                    loss_v = loss.item()
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    compiled = f"compiled (first step {time.time() - t_c:.0f} s)"
                except BaseException as e:  # noqa: B902: any failure of the compiler means eager
                    signal.setitimer(signal.ITIMER_REAL, 0)
                    if isinstance(e, KeyboardInterrupt):
                        raise
                    compiled = f"fell back to eager: {type(e).__name__}: {str(e)[:300]}"
                    net = model
                    try:
                        torch._dynamo.reset()
                    except Exception:
                        pass
                    opt.zero_grad(set_to_none=True)
                    loss, norm = step_once(net, x, y, m)
                    loss_v = loss.item()
                finally:
                    signal.signal(signal.SIGALRM, old)
                log(f"torch.compile: {compiled}")
            else:
                loss, norm = step_once(net, x, y, m)
                loss_v = None
            first_step = state["train_start"] is None
            if first_step:
                # The rates' clock starts after the first step, which holds
                # torch.compile's compilation and the warm-up: nothing of the
                # speed of training. --train-seconds counts from here too.
                state["train_start"] = t_log = time.time()
                win = {"seen": 0, "tokens": 0, "flops": 0.0, "t": t_log}
                if args.train_seconds:
                    stop.deadline = min(stop.deadline, t_log + args.train_seconds)
            state["step"] += 1
            state["tokens"] += binfo["kept"]
            state["seen"] += binfo["tokens"]
            state["padded"] += binfo["padded"]
            fl = (6 * body * binfo["tokens"] + 6 * head * binfo["kept"]
                  + 12 * cfg["num_hidden_layers"] * cfg["hidden_size"] * binfo["pairs"])
            state["flops_all"] += fl
            if not first_step:
                state["flops"] += fl
                state["rate_seen"] += binfo["tokens"]
                state["rate_tokens"] += binfo["kept"]
                win["seen"] += binfo["tokens"]
                win["tokens"] += binfo["kept"]
                win["flops"] += fl
            d = loss.detach()
            loss_acc = d if loss_acc is None else loss_acc + d
            loss_n += 1
            now = time.time()
            state["train_seconds"] = now - state["train_start"]
            if now - t_log >= args.log_every or loss_v is not None:
                lv = (loss_acc / loss_n).item()  # one synchronisation per progress line
                state["last_loss"] = lv
                if not math.isfinite(lv) or not math.isfinite(float(norm)):
                    state["stopped"] = f"non-finite loss {lv} or gradient norm at step {state['step']}"
                    log(f"STOP: {state['stopped']}; the last export stays")
                    break
                dt = max(now - win["t"], 1e-9)
                rate = win["flops"] / dt
                c = (round(now - t_start, 1), state["step"], state["tokens"], round(win["seen"] / dt),
                     round(win["tokens"] / dt), round(rate / 1e12, 2),
                     round(rate / peak_nominal, 4) if peak_nominal else "", round(rate / peak_measured, 4)
                     if peak_measured else "", f"{lr:.3e}", round(lv, 4))
                curve.append(c)
                rows.append((state["step"], state["tokens"], lv, None))
                log(f"step {state['step']} loss {lv:.4f} lr {lr:.2e} norm {float(norm):.2f} "
                    f"{state['tokens']:,} loss tokens, {win['seen'] / dt:,.0f} tok/s, {rate / 1e12:.1f} TFLOP/s"
                    + (f", MFU {rate / peak_nominal:.1%}" if peak_nominal else "") + f", {stop.left():.0f} s left")
                win = {"seen": 0, "tokens": 0, "flops": 0.0, "t": now}
                loss_acc, loss_n, t_log = None, 0, now
                first = state["last_export"] is None and now - state["train_start"] >= args.first_export
                due = state["last_export"] is not None and now - state["last_export"] >= args.export_every
                if (first or due) and stop.left() > args.export_margin and not export():
                    break
    except Exception as e:
        state["stopped"] = f"{type(e).__name__}: {e}"
        log(f"STOP: training failed: {e!r}")
        feed.close()
        try:
            export(final=True)  # refuses weights that are not finite
        finally:
            write_report(True)
        raise
    feed.close()
    if not state["stopped"]:
        state["stopped"] = f"signal {stop.signal}" if stop.signal is not None else "deadline"
        if loss_n:
            state["last_loss"] = (loss_acc / loss_n).item()
        if state["export_step"] != state["step"]:  # else the last periodic export is this step's
            export(final=True)
    write_report(True)
    shutil.rmtree(stage, ignore_errors=True)
    log(f"done: {state['stopped']}; {state['step']} steps, {state['tokens']:,} loss tokens, "
        f"{state['seen']:,} tokens in {state['train_seconds']:.0f} s of training")
    return 0


if __name__ == "__main__":
    sys.exit(main())
