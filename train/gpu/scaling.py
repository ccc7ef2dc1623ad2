#!/usr/bin/env python3
"""The scaling estimate behind the GPU run's model size: held-out loss against
training compute at three small sizes, on this CPU, and where the
compute-optimal size heads at the GPU run's compute (train/RESULTS.md).

  scaling.py run --ndbg NDBG --out DIR [--seconds 300] [--chunks 6]
  scaling.py fit DIR [--gpu-flops 1e17]

run: makes the data once (chunks of the GPU run's mix with seeds 2,950,000
+ k, the held-out split of seed 2; the carried CPython is not needed here),
then trains each of SIZES for --seconds of one CPU thread with
train/gpu/gpu_train.py itself (the blocked attention of the CPU path, F32), at
a constant learning rate after a short warmup, with the held-out loss every
--eval-every seconds; DIR/<size>/evals.csv has the held-out loss against
model FLOPs (6 per product parameter and token, lm_head at the loss
positions, attention over the causal pairs).

fit: per size, the loss curve against compute (log-log interpolation); the
frontier (the lowest loss any size reaches at each compute) and which size
gives it; where a larger size overtakes a smaller one (the crossovers); the
compute-optimal size N_opt ~ C^a through the crossovers (a fitted with two,
Chinchilla's 0.5 assumed with one), extrapolated to --gpu-flops; and the
frontier's power law L = A C^-alpha. Four orders of magnitude of
extrapolation: a direction and a size class, not a number to trust.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SIZES = {  # name: (layers, hidden, heads, ffn)
    "s1": (2, 64, 4, 192),
    "s2": (3, 128, 4, 384),
    "s3": (4, 256, 8, 704),
}
SEED_BASE = 2_950_000
VOCAB = 4096


def product_params(layers, hidden, ffn):
    """Parameters in the matrix products (attention, MLP, lm_head)."""
    return layers * (4 * hidden * hidden + 3 * hidden * ffn) + VOCAB * hidden


def make_data(ndbg, out, chunks):
    sys.path.insert(0, HERE)
    import datagen
    data, held = os.path.join(out, "data"), os.path.join(out, "heldout")
    tok = os.path.join(ROOT, "weights", "default", "tokenizer.json")
    have = len([n for n in os.listdir(data) if n.startswith("chunk-")]) if os.path.isdir(data) else 0
    if have < chunks:
        py = subprocess.run(["python3", "-S", "-c", "import os, sys; print(os.path.realpath(sys.executable))"],
                            capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run([sys.executable, os.path.join(HERE, "datagen.py"), "run", "--ndbg", ndbg, "--python", py,
                        "--tokenizer", tok, "--out", data, "--first-seed", str(SEED_BASE + have), "--programs", "1000",
                        "--jobs", "1", "--workers", "1", "--max-chunks", str(chunks - have), "--ahead", "1000000",
                        "--families", datagen.FAMILIES], check=True)
    if not os.path.exists(os.path.join(held, "val.tokens")):
        raw = os.path.join(out, "heldout-raw")
        subprocess.run([ndbg, "data", "--n", "400", "--seed", "2", "--workers", "1", "--out", raw,
                        "--families", datagen.SHORT_FAMILIES], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([ndbg, "tokenize", "--tokenizer", tok, "--train", raw, "--val", raw, "--out", held], check=True,
                       stdout=subprocess.DEVNULL)
    with open(os.path.join(held, "meta.json")) as f:
        return data, held, json.load(f)["python"]


def run(args):
    os.makedirs(args.out, exist_ok=True)
    data, held, pyver = make_data(args.ndbg, args.out, args.chunks)
    for name, (layers, hidden, heads, ffn) in SIZES.items():
        rep = os.path.join(args.out, name)
        if os.path.exists(os.path.join(rep, "evals.csv")) and not args.again:
            print(f"{name}: done before ({rep}/evals.csv)", flush=True)
            continue
        # Each size sees the chunks from the first again (no .consumed left over).
        for c in os.listdir(data):
            p = os.path.join(data, c, ".consumed")
            if os.path.exists(p):
                os.remove(p)
        print(f"{name}: {layers} layers x {hidden}, ffn {ffn}: {product_params(layers, hidden, ffn):,} "
              f"parameters in products", flush=True)
        cmd = [sys.executable, os.path.join(HERE, "gpu_train.py"), "--data", data, "--heldout", held,
               "--tokenizer", os.path.join(ROOT, "weights", "default", "tokenizer.json"),
               "--out", os.path.join(rep, "model"), "--report", rep, "--deadline", "9999999999",
               "--train-seconds", str(args.seconds), "--python-version", pyver, "--device", "cpu", "--threads", "1",
               "--layers", str(layers), "--hidden", str(hidden), "--heads", str(heads), "--ffn", str(ffn),
               "--block", "2048", "--batch-tokens", "4096", "--lr", "3e-3", "--min-lr-ratio", "1.0", "--warmup", "20",
               "--first-export", str(args.eval_every), "--export-every", str(args.eval_every), "--export-margin", "0",
               "--log-every", "15", "--eval-batches", "4", "--eval-rows", "16", "--shard-mib", "64",
               "--max-model-files", "20"]
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        subprocess.run(cmd, check=True, env=env)


def read_evals(path):
    pts = []
    with open(path) as f:
        next(f)
        for line in f:
            step, _lt, tokens, flops, secs, loss = line.strip().split(",")
            pts.append((float(flops), float(loss), int(tokens)))
    return pts


def interp(pts, c):
    """log-log interpolation of a loss curve at compute c (None outside it)."""
    for (c0, l0, _), (c1, l1, _) in zip(pts, pts[1:]):
        if c0 <= c <= c1 and c1 > c0:
            w = (math.log(c) - math.log(c0)) / (math.log(c1) - math.log(c0))
            return math.exp(math.log(l0) + w * (math.log(l1) - math.log(l0)))
    return None


def linfit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return b, my - b * mx


def fit(args):
    curves = {}
    for name, (layers, hidden, _heads, ffn) in SIZES.items():
        p = os.path.join(args.dir, name, "evals.csv")
        if os.path.exists(p):
            curves[name] = (product_params(layers, hidden, ffn), read_evals(p))
    if len(curves) < 2:
        sys.exit(f"scaling: fewer than two sizes done in {args.dir}")
    print("| size | parameters in products | evaluations | compute (FLOPs) | tokens | held-out loss at the end |")
    print("|---|---|---|---|---|---|")
    for name, (n, pts) in curves.items():
        print(f"| {name} {SIZES[name][:2]} | {n:,} | {len(pts)} | {pts[0][0]:.2e} - {pts[-1][0]:.2e} | "
              f"{pts[-1][2]:,} | {pts[-1][1]:.3f} |")
    names = sorted(curves, key=lambda k: curves[k][0])
    # The compute every size covers: a frontier elsewhere would compare a
    # size with nothing.
    lo = max(pts[0][0] for _, pts in curves.values())
    hi = min(pts[-1][0] for _, pts in curves.values())
    grid = [math.exp(math.log(lo) + i * (math.log(hi) - math.log(lo)) / 40) for i in range(41)]
    frontier = []
    for c in grid:
        best = min(((interp(curves[k][1], c), k) for k in names if interp(curves[k][1], c) is not None),
                   default=None)
        if best:
            frontier.append((c, best[0], best[1]))
    print("\nFrontier (the lowest held-out loss at each compute, and the size that gives it):\n")
    print("| compute | loss | size |\n|---|---|---|")
    for c, l, k in frontier[::5]:
        print(f"| {c:.2e} | {l:.3f} | {k} |")
    cross = []
    for a, b in zip(names, names[1:]):
        prev = None
        for c in grid:
            la, lb = interp(curves[a][1], c), interp(curves[b][1], c)
            if la is None or lb is None:
                continue
            if prev is not None and prev >= 0 and lb < la:
                cross.append((c, math.sqrt(curves[a][0] * curves[b][0]), a, b))
                break
            prev = la - lb
    print()
    for c, n, a, b in cross:
        print(f"crossover: {b} overtakes {a} at {c:.2e} FLOPs (N_opt there about {n:,.0f})")
    gpu = args.gpu_flops
    if len(cross) >= 2:
        a_exp, b0 = linfit([math.log(c) for c, *_ in cross], [math.log(n) for _, n, *_ in cross])
        how = f"fitted through {len(cross)} crossovers"
    elif len(cross) == 1:
        a_exp = 0.5
        b0 = math.log(cross[0][1]) - a_exp * math.log(cross[0][0])
        how = "one crossover, Chinchilla's exponent 0.5 assumed"
    else:
        a_exp = b0 = None
        how = "no crossover within the compute measured"
    if a_exp is not None:
        n_gpu = math.exp(b0 + a_exp * math.log(gpu))
        print(f"N_opt ~ C^{a_exp:.2f} ({how}): at {gpu:.1e} FLOPs, N_opt about {n_gpu / 1e6:.0f}M parameters in products")
    else:
        print(f"N_opt: {how}")
    print(f"Chinchilla (20 tokens a parameter, C = 6 N D): N_opt at {gpu:.1e} FLOPs = {math.sqrt(gpu / 120) / 1e6:.0f}M")
    alpha, logA = linfit([math.log(c) for c, _, _ in frontier], [math.log(l) for _, l, _ in frontier])
    print(f"frontier: L = {math.exp(logA):.3g} C^{alpha:.3f}; at {gpu:.1e} FLOPs that gives {math.exp(logA + alpha * math.log(gpu)):.3f} "
          "(no irreducible term fitted: a lower bound on the loss, far out of range)")
    parametric(curves, gpu)


def parametric(curves, gpu):
    """Chinchilla's form L(N, D) = E + A N^-a + B D^-b fitted to every
    evaluation (N parameters in products, D tokens processed): for each
    (a, b) on a grid, E, A and B by least squares (all three kept >= 0) on
    the relative error; then N_opt(C) = G (C/k)^(b/(a+b)) with
    G = (aA/(bB))^(1/(a+b)) and k = C/(N D) as measured (about 6)."""
    import numpy as np
    pts = [(n, d, c, l) for n, ps in curves.values() for c, l, d in ps]
    N, D, C, L = (np.array(v, dtype=float) for v in zip(*pts))
    k = float(np.median(C / (N * D)))
    best = None
    for a in np.arange(0.05, 1.0001, 0.01):
        for b in np.arange(0.05, 1.0001, 0.01):
            X = np.stack([np.ones_like(N), N ** -a, D ** -b], axis=1) / L[:, None]
            coef, *_ = np.linalg.lstsq(X, np.ones_like(L), rcond=None)
            if (coef < 0).any():
                continue
            err = float(((X @ coef - 1) ** 2).mean())
            if best is None or err < best[0]:
                best = (err, a, b, coef)
    if best is None:
        print("parametric fit: no non-negative fit")
        return
    err, a, b, (E, A, B) = best
    G = (a * A / (b * B)) ** (1 / (a + b))
    n_opt = G * (gpu / k) ** (b / (a + b))
    d_opt = gpu / (k * n_opt)
    print(f"parametric fit over {len(L)} evaluations: L = {E:.3f} + {A:.3g} N^-{a:.2f} + {B:.3g} D^-{b:.2f} "
          f"(rms relative error {math.sqrt(err):.3f}); C = {k:.1f} N D")
    print(f"  -> N_opt ~ C^{b / (a + b):.2f}: at {gpu:.1e} FLOPs N_opt about {n_opt / 1e6:.1f}M parameters in products "
          f"on {d_opt / 1e6:.0f}M tokens, loss {E + A * n_opt ** -a + B * d_opt ** -b:.3f}")
    for n_m in (10e6, 30e6, 60e6):
        dd = gpu / (k * n_m)
        print(f"     a model of {n_m / 1e6:.0f}M at {gpu:.1e} FLOPs ({dd / 1e6:.0f}M tokens): predicted loss "
              f"{E + A * n_m ** -a + B * dd ** -b:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--ndbg", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--seconds", type=float, default=300)
    r.add_argument("--eval-every", type=float, default=30)
    r.add_argument("--chunks", type=int, default=6)
    r.add_argument("--again", action="store_true", help="redo sizes already done")
    f = sub.add_parser("fit")
    f.add_argument("dir")
    f.add_argument("--gpu-flops", type=float, default=1e17)
    args = ap.parse_args()
    return run(args) if args.cmd == "run" else fit(args)


if __name__ == "__main__":
    sys.exit(main())
