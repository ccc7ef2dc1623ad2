#!/usr/bin/env python3
"""Training throughput against the machine's FMA peak, measured in one run.

  flops.py [--ndbg NDBG] [--threads 1] [--data TOKDIR --batches 12] [--shapes 4x2048,16x512]
           [--variants old,new] [--profile 4x2048]

(a) The peak: `ndbg bench --machine --threads N` (the Go kernels' F32 FMA
loop, kernels.MeasureFMAPeak) when --ndbg is given, and torch's own matrix
product (1024^3 F32, best of 5), the most a PyTorch trainer can expect.
(b) The trainer: train.py's model with the config of --model (the default
model) at --block positions, training steps as continuous.py takes them
(forward, masked loss, backward, clipping, AdamW): on --batches of a
tokenized chunk (--data, batched as continuous.py batches it: the real mix
of lengths and of program source, which has no loss), and on synthetic
batches of each shape ROWSxLENGTH. Variant "new" is the trainer's step;
"old" is the step before blocked attention, logits at the loss positions
only and train.tune_malloc (train.plain_causal_attention, masked_loss's
all_logits, glibc's defaults): the old variants run first, then
tune_malloc applies for the new ones, as it does in the trainer.

FLOPs are those each variant performs (step_flops): 6 per token and
parameter of the products, and attention's two products over the query-key
pairs it computes. Rates are per CPU-second of this process
(time.process_time), which on a shared machine is what compares with the
peak (itself the best of many short runs); wall seconds are shown too.
Threads: OMP_NUM_THREADS and OPENBLAS_NUM_THREADS are set to --threads
before torch loads, as continue.sh does.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time


def parse_args(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ndbg", default="", help="ndbg binary: its `bench --machine` FMA peak")
    ap.add_argument("--model", default=os.path.join(here, "..", "weights", "default"), help="export whose config to use")
    ap.add_argument("--block", type=int, default=2048, help="max_position_embeddings of the model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--shapes", default="4x2048,16x512,64x128", help="synthetic batch shapes ROWSxLENGTH ('' for none)")
    ap.add_argument("--steps", type=int, default=2, help="timed steps per synthetic shape")
    ap.add_argument("--variants", default="old,new",
                    help="comma-separated: new (the trainer's step), old (plain attention, logits everywhere)")
    ap.add_argument("--data", default="", help="an `ndbg tokenize` directory: time --batches of its train split "
                    "as continuous.py batches a chunk")
    ap.add_argument("--batches", type=int, default=12)
    ap.add_argument("--attention-block", type=int, default=0, help="train.ATTENTION_BLOCK (0: the trainer's)")
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--prompt", type=float, default=0.0,
                    help="share of each synthetic row that is program source (no loss)")
    ap.add_argument("--profile", default="", help="a shape ROWSxLENGTH to profile one step of (torch.profiler)")
    return ap.parse_args(argv)


def shape(s):
    b, t = s.lower().split("x")
    return int(b), int(t)


def fma_peak(ndbg, threads):
    """GFLOP/s of `ndbg bench --machine` at threads, or None without ndbg."""
    if not ndbg:
        return None
    out = subprocess.run([ndbg, "bench", "--machine", "--threads", str(threads)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(rf"^\| {threads} \| [0-9.]+ \| ([0-9.]+) \|$", out, re.M)
    if not m:
        raise RuntimeError(f"ndbg bench --machine printed no row for {threads} threads:\n{out}")
    return float(m.group(1))


def step_flops(cfg, body, head, rows, width, kept, variant):
    """FLOPs a training step performs on rows x width tokens of which kept
    are loss targets: 6 per parameter and token for the products (lm_head's
    head parameters at the kept positions only under "new"), and attention's
    two products, 4 h per query-key pair per layer forward, 12 h forward
    and backward, over the whole square ("old") or the blocks' rectangles
    ("new", train.causal_attention)."""
    tokens = rows * width
    if variant == "old":
        pairs = width * width
        head_tokens = tokens
    else:
        import train as T
        pairs = sum((min(s + T.ATTENTION_BLOCK, width) - s) * min(s + T.ATTENTION_BLOCK, width)
                    for s in range(0, width, T.ATTENTION_BLOCK))
        head_tokens = kept
    attn = 12 * cfg["num_hidden_layers"] * cfg["hidden_size"] * pairs * rows
    return 6 * body * tokens + 6 * head * head_tokens + attn


def product_params(model):
    """Parameters of the matrix products: every Linear's weight."""
    import torch
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


def best_of(fn, reps):
    """Best (wall, CPU) seconds of fn over reps runs."""
    wall = cpu = float("inf")
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - w0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu


def main(argv=None):
    args = parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train as T
    torch.set_num_threads(args.threads)
    if args.attention_block:
        T.ATTENTION_BLOCK = args.attention_block

    peak = fma_peak(args.ndbg, args.threads)
    a = torch.randn(1024, 1024)
    b = torch.randn(1024, 1024)
    mm_wall, mm_cpu = best_of(lambda: a @ b, 5)
    mm = 2 * 1024 ** 3 / 1e9
    print(f"threads {args.threads}, torch {torch.__version__}")
    if peak:
        print(f"F32 FMA peak (ndbg bench --machine): {peak:.1f} GFLOP/s")
    print(f"torch 1024^3 matmul: {mm / mm_wall:.1f} GFLOP/s wall, {mm / max(mm_cpu, 1e-9):.1f} per CPU-s"
          + (f" ({100 * mm / max(mm_cpu, 1e-9) / peak:.0f}% of the FMA peak)" if peak else ""))

    cfg, _ = T.load_export(args.model)
    cfg["max_position_embeddings"] = args.block
    torch.manual_seed(0)
    model = T.Llama(cfg)
    opt = T.make_optimizer(model, 1e-4, 0.1, torch.device("cpu"))
    head = model.lm_head.weight.numel()
    body = product_params(model) - head
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, {(body + head) / 1e6:.2f}M in "
          f"products ({head / 1e6:.2f}M lm_head), {cfg['num_hidden_layers']} layers, hidden {cfg['hidden_size']}, "
          f"block {args.block}")
    blocked = T.causal_attention

    def step(batch, variant):
        """One training step on batch (x, y, mask) as variant: "new" is the
        trainer's, "old" its attention and loss before blocks and kept logits."""
        T.causal_attention = blocked if variant == "new" else T.plain_causal_attention
        x, y, m = batch
        loss = T.masked_loss(model, x, y, m, all_logits=variant == "old")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        T.causal_attention = blocked

    def synthetic(rows, length):
        g = torch.Generator().manual_seed(rows * length)
        x = torch.randint(2, cfg["vocab_size"], (rows, length), generator=g)
        y = torch.randint(2, cfg["vocab_size"], (rows, length), generator=g)
        m = torch.ones(rows, length)
        m[:, :int(args.prompt * length)] = 0
        return x, y, m

    cols = ("| batches | variant | tokens | loss tokens | GFLOP | s (wall) | s (CPU) | tokens/CPU-s | loss tokens/CPU-s "
            "| GFLOP/CPU-s |" + (" % FMA peak |" if peak else "") + " % torch matmul |")
    print(cols)
    print("|" + "---|" * (cols.count("|") - 1))
    work = []
    if args.data:
        split = T.Split(args.data, "train")
        with open(os.path.join(args.data, "meta.json")) as f:
            pad_id = json.load(f)["pad_id"]
        import continuous as C
        order = C.chunk_batches(split, 1, 0, args.batch_tokens, args.block)
        batches = [split.rows(b, args.block, pad_id) for b in order[:args.batches]]
        work.append((f"{len(batches)} of {os.path.basename(os.path.normpath(args.data))}", batches))
    for rows, length in map(shape, filter(None, args.shapes.split(","))):
        work.append((f"{rows}x{length}", [synthetic(rows, length)] * args.steps))
    for variant in args.variants.split(","):
        if variant == "new":
            T.tune_malloc()  # from here on, as the trainer runs; old ran with glibc's defaults
        for label, batches in work:
            step(batches[0], variant)  # warm-up: allocations, the optimizer's state
            w0, c0 = time.perf_counter(), time.process_time()
            for b in batches:
                step(b, variant)
            wall, cpu = time.perf_counter() - w0, max(time.process_time() - c0, 1e-9)
            tokens = sum(b[0].numel() for b in batches)
            kept = sum(int((b[2] > 0).sum()) for b in batches)
            gf = sum(step_flops(cfg, body, head, b[0].shape[0], b[0].shape[1], int((b[2] > 0).sum()), variant)
                     for b in batches) / 1e9
            rate = gf / cpu
            print(f"| {label} | {variant} | {tokens} | {kept} | {gf:.0f} | {wall:.1f} | {cpu:.1f} | {tokens / cpu:.0f} "
                  f"| {kept / cpu:.0f} | {rate:.1f} |" + (f" {100 * rate / peak:.0f}% |" if peak else "")
                  + f" {100 * rate / (mm / mm_cpu):.0f}% |", flush=True)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        batch = synthetic(*shape(args.profile))
        step(batch, "new")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step(batch, "new")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    sys.exit(main())
