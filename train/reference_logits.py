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
import glob
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train as T  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        b, e = h["data_offsets"]
        raw = np.frombuffer(data[b:e], dtype={"F32": "<f4", "BF16": "<u2", "F16": "<f2"}[h["dtype"]])
        if h["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = torch.from_numpy(raw.astype(np.float32).reshape(h["shape"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("tokens")
    ap.add_argument("--sequences", type=int, default=3)
    ap.add_argument("--length", type=int, default=96)
    args = ap.parse_args()
    with open(os.path.join(args.model, "config.json")) as f:
        hf = json.load(f)
    cfg = {k: hf[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                              "num_attention_heads", "num_key_value_heads", "head_dim",
                              "max_position_embeddings", "rms_norm_eps", "rope_theta", "tie_word_embeddings")}
    model = T.Llama(cfg)
    sd = {}
    for p in sorted(glob.glob(os.path.join(args.model, "model*.safetensors"))):
        sd.update(read_safetensors(p))
    if cfg["tie_word_embeddings"]:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
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
