#!/usr/bin/env python3
"""The length distribution of a tokenized split (`ndbg tokenize` output):
documents (trajectories, program source included) by token count, the
share of documents and of tokens in each range, and percentiles.

  lengths.py DIR [--split train] [--block 2048]

Documents longer than --block + 1 tokens are cut there by the trainer; the
table counts them in the last range.
"""
import argparse
import os
import sys

import numpy as np

RANGES = [(0, 512), (512, 1024), (1024, 1500), (1500, 2049), (2049, None)]


def distribution(offsets):
    """Rows (label, documents, share of documents, share of tokens) and
    percentiles of document lengths given a split's offsets."""
    lens = np.diff(np.asarray(offsets, dtype=np.int64))
    total = max(int(lens.sum()), 1)
    rows = []
    for lo, hi in RANGES:
        sel = (lens >= lo) & (lens < hi) if hi is not None else lens >= lo
        label = f"{lo}-{hi - 1}" if hi is not None else f">={lo}"
        rows.append((label, int(sel.sum()), float(sel.mean()) if len(lens) else 0.0, float(lens[sel].sum()) / total))
    pct = {p: int(np.percentile(lens, p)) for p in (10, 50, 90, 99)} if len(lens) else {}
    return rows, pct, lens


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("--split", default="train")
    args = ap.parse_args()
    base = os.path.join(args.dir, args.split)
    offsets = np.fromfile(base + ".offsets", dtype="<u8")
    prompt = np.fromfile(base + ".prompt", dtype="<u4").astype(np.int64)
    rows, pct, lens = distribution(offsets)
    print(f"{len(lens)} documents, {int(lens.sum()):,} tokens, mean {lens.mean():.0f}, "
          f"max {lens.max()}; program source (prompt) mean {prompt.mean():.0f}")
    print("percentiles " + " ".join(f"p{p} {v}" for p, v in pct.items()))
    print(f"{'tokens':>10} {'documents':>10} {'share':>7} {'of tokens':>9}")
    for label, n, share, tok in rows:
        print(f"{label:>10} {n:>10} {100 * share:>6.1f}% {100 * tok:>8.1f}%")


if __name__ == "__main__":
    sys.exit(main())
