#!/usr/bin/env python3
"""Logits of an exported model, computed by PyTorch, for the Go engine's
conformance test: the model in DIR (config.json + safetensors, as train.py
exports it) is rebuilt with train.py's own modules, its weights read from the
safetensors files (BF16 widened to F32, the engine's arithmetic), and run on
a few fixed token sequences taken from a held-out token file. Writes
DIR/reference_logits.json: the sequences, the positions checked and the
logits there.

  reference_logits.py MODEL_DIR TOKENS_DIR [--sequences 3] [--length 96]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("tokens")
    ap.add_argument("--sequences", type=int, default=3)
    ap.add_argument("--length", type=int, default=96)
    args = ap.parse_args()
    cfg, sd = T.load_export(args.model)
    model = T.Llama(cfg)
    model.load_state_dict(sd)
    model.eval()
    split = T.Split(args.tokens, "val")
    seqs, positions, logits = [], [], []
    for d in range(args.sequences):
        start = split.offsets[d]
        ids = [int(t) for t in split.tokens[start:min(split.offsets[d + 1], start + args.length)]]
        with torch.no_grad():
            out = model(torch.tensor([ids]))[0]
        pos = sorted({0, len(ids) // 3, 2 * len(ids) // 3, len(ids) - 1})
        seqs.append(ids)
        positions.append(pos)
        logits.append([[round(float(v), 5) for v in out[p]] for p in pos])
    with open(os.path.join(args.model, "reference_logits.json"), "w") as f:
        json.dump({"torch": torch.__version__, "sequences": seqs, "positions": positions, "logits": logits}, f)
    print(f"wrote {args.model}/reference_logits.json: {len(seqs)} sequences")


if __name__ == "__main__":
    main()
