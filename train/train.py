#!/usr/bin/env python3
"""Train ndbg's neural debugger: a LLaMA-architecture decoder on DSL trajectories.

Input is a directory written by `ndbg tokenize` (see train/README.md):
  {train,val}.tokens   uint32 little-endian token ids, documents back to back
  {train,val}.offsets  uint64 little-endian document starts, one more than documents
  {train,val}.prompt   uint32 little-endian prompt length of each document (tokens
                       of the program source, which the model reads but is not
                       trained to write)
  meta.json            {"vocab_size": V, "bos_id": .., "eos_id": .., "pad_id": ..}
and the tokenizer.json that made it.

Output (--out): checkpoints (ckpt.pt, for --resume) and, at the end, an export the
Go engine loads: model.safetensors (sharded above --shard-mib), config.json with
Hugging Face LlamaConfig fields, tokenizer.json, loss.csv, loss.png and README.md
(the model card).

Runs the same on the CPU (F32) and on a GPU (BF16 autocast); several GPUs with
`torchrun --nproc_per_node N train/train.py ...` (DDP).
"""
import argparse
import ctypes
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------- data

class Split:
    """One split of tokenized trajectories, memory-mapped."""

    def __init__(self, directory, name):
        base = os.path.join(directory, name)
        self.tokens = np.memmap(base + ".tokens", dtype="<u4", mode="r")
        self.offsets = np.fromfile(base + ".offsets", dtype="<u8").astype(np.int64)
        self.prompt = np.fromfile(base + ".prompt", dtype="<u4").astype(np.int64)
        n = len(self.offsets) - 1
        if n <= 0 or len(self.prompt) != n or self.offsets[-1] != len(self.tokens):
            raise ValueError(f"{base}: offsets/prompt/tokens do not agree")
        self.n = n

    def batch(self, rng, batch_size, block, pad_id):
        """Random documents, each cut to block+1 tokens from its start (the
        program must stay in view) and padded. Loss only on the frames."""
        return self.rows(rng.integers(0, self.n, size=batch_size), block, pad_id)

    def bucketed_batch(self, rng, budget, block, pad_id):
        """Random documents of about one length, as many as fit budget tokens.

        Trajectories run from ~100 to ~600 tokens, so random rows padded to the
        longest spend most of a step on padding. Here documents are drawn
        uniformly (as batch() draws them) into a pool of about 64 batches, the
        pool is sorted by length and cut into batches of at most budget tokens
        each, and those are handed out in random order."""
        if not getattr(self, "_queue", None):
            lens = np.minimum(np.diff(self.offsets), block + 1)
            pool = rng.integers(0, self.n, size=max(1, 64 * budget // int(lens.mean())))
            self._queue = bucket(pool, lens, budget, rng)
        return self.rows(self._queue.pop(), block, pad_id)

    def rows(self, docs, block, pad_id):
        """Inputs, targets and loss mask of documents docs, each cut to block+1
        tokens from its start and padded to the longest."""
        lens = np.minimum(self.offsets[docs + 1] - self.offsets[docs], block + 1)
        width = int(lens.max())  # trim the padding: trajectories are mostly far shorter than block
        x = np.full((len(docs), width), pad_id, dtype=np.int64)
        mask = np.zeros((len(docs), width - 1), dtype=np.float32)
        for b, d in enumerate(docs):
            start = self.offsets[d]
            x[b, :lens[b]] = self.tokens[start:start + lens[b]]
            # Target t (predicting x[t+1]) counts when x[t+1] is past the prompt.
            lo = max(self.prompt[d] - 1, 0)
            mask[b, lo:lens[b] - 1] = 1.0
        return torch.from_numpy(x[:, :-1]), torch.from_numpy(x[:, 1:]), torch.from_numpy(mask)


def bucket(pool, lens, budget, rng):
    """Cuts the documents in pool into batches of about one length: pool is
    sorted by length (lens[doc], stable) and cut where another row would take
    the batch past budget tokens; the batches come back in random order."""
    pool = pool[np.argsort(lens[pool], kind="stable")]
    batches, start = [], 0
    for i in range(1, len(pool) + 1):
        # pool is sorted: adding pool[i] makes it the widest row
        if i == len(pool) or (i + 1 - start) * lens[pool[i]] > budget:
            batches.append(pool[start:i])
            start = i
    return [batches[j] for j in rng.permutation(len(batches))]


def tune_malloc():
    """Makes glibc's malloc keep freed memory for reuse: blocks up to 32 MiB
    come from the heap, which is trimmed only past 1 GiB free. Attention's
    score blocks and their gradients are megabytes each; by default the
    larger ones are mmap'd afresh and returned at every free, and zeroing
    the new pages cost as much CPU as the products (train/RESULTS.md).
    Returns whether it applied (False off glibc)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    return all(mallopt(k, v) == 1 for k, v in ((m_mmap_threshold, 32 << 20), (m_trim_threshold, 1 << 30),
                                               (m_top_pad, 64 << 20)))


# ---------------------------------------------------------------- model

class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rope_tables(cfg, length, device):
    """cos/sin tables in Hugging Face's rotate_half layout (no llama3 scaling:
    the default model is trained at its full context)."""
    d = cfg["head_dim"]
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    t = torch.arange(length, dtype=torch.float64)
    freqs = torch.outer(t, inv)
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().float().to(device), emb.sin().float().to(device)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, d = cfg["hidden_size"], cfg["head_dim"]
        self.nh, self.nkv, self.d = cfg["num_attention_heads"], cfg["num_key_value_heads"], d
        self.q_proj = nn.Linear(h, self.nh * d, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.o_proj = nn.Linear(self.nh * d, h, bias=False)

    def forward(self, x, cos, sin, causal):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.nh, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.nkv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.nkv, self.d).transpose(1, 2)
        # The tables are F32: under BF16 autocast q and k would come out F32,
        # and the fused kernels take q, k and v in one dtype (BF16 on a GPU).
        q = (q * cos + rotate_half(q) * sin).to(v.dtype)
        k = (k * cos + rotate_half(k) * sin).to(v.dtype)
        if self.nkv != self.nh:
            rep = self.nh // self.nkv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        y = fused_causal_attention(q, k, v) if causal is None else causal_attention(q, k, v, causal)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.nh * self.d))


def plain_causal_attention(q, k, v, bias):
    """causal_attention as the plain formula over the whole t x t square (the
    trainer's attention until blocks replaced it; the reference in tests and
    in train/flops.py's comparison)."""
    att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + bias.to(q.dtype)
    return F.softmax(att.float(), dim=-1).to(q.dtype) @ v


# Query rows per block of causal_attention: 128 measured fastest of 64-512 at
# 4 x 2048 on one thread (train/RESULTS.md).
ATTENTION_BLOCK = 128


def causal_attention(q, k, v, bias):
    """softmax(q k^T / sqrt(d) + bias) v over (batch, heads, t, d), where bias
    (t x t) is 0 on and below the diagonal and -inf above it, computed in
    blocks of ATTENTION_BLOCK query rows, each against the keys up to its
    last row only: the products and the softmax skip the masked upper
    triangle (at t = 2048 they do 53% of the full square's work), the scale
    and the mask ride in the product (baddbmm), and the blocks' scores are
    small enough to stay off fresh mmap'd pages. The same function as the
    plain formula (train/test_continuous.py checks values and gradients)."""
    b, h, t, d = q.shape
    q = (q * (1.0 / math.sqrt(d))).reshape(b * h, t, d)
    k = k.reshape(b * h, t, d)
    v = v.reshape(b * h, t, d)
    out = []
    for s in range(0, t, ATTENTION_BLOCK):
        e = min(s + ATTENTION_BLOCK, t)
        att = torch.baddbmm(bias[s:e, :e].to(q.dtype), q[:, s:e], k[:, :e].transpose(1, 2))
        out.append(F.softmax(att.float(), dim=-1).to(q.dtype) @ v[:, :e])
    y = out[0] if len(out) == 1 else torch.cat(out, dim=1)
    return y.reshape(b, h, t, d)


# Whether attention runs as torch's fused scaled_dot_product_attention
# (PyTorch 2.0+: flash or memory-efficient kernels on a GPU, a fused kernel
# on the CPU) instead of causal_attention's blocks. Debian's torch 1.13 has
# no such function, so there the blocks run. The two compute the same
# function (test_continuous.ModelTest.test_fused_equals_blocked, where
# torch has it; train/gpu/gpu_train.py checks it again on the device before
# it trains). Set it to False to force the blocks.
USE_FUSED_ATTENTION = hasattr(F, "scaled_dot_product_attention")


def fused_causal_attention(q, k, v):
    """causal_attention through torch's scaled_dot_product_attention (the
    causal mask is the kernel's own: nothing t x t is materialised)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        h, f = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])

    def forward(self, x, cos, sin, causal):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, causal)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """LLaMA decoder whose state_dict keys are Hugging Face's LlamaForCausalLM names."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.model.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.model.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        if cfg["tie_word_embeddings"]:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg["num_hidden_layers"]))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, idx, keep=None):
        """Logits at every position of idx (batch, t), or, given keep (a
        boolean mask of idx's shape), at the kept positions only, as (kept,
        vocab): training needs none at the program source's positions, and
        lm_head is a quarter of the default model's products."""
        t = idx.shape[1]
        cos, sin = rope_tables(self.cfg, t, idx.device)
        # None: the fused kernel masks by itself (USE_FUSED_ATTENTION).
        causal = None if USE_FUSED_ATTENTION else torch.full((t, t), float("-inf"), device=idx.device).triu(1)
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = layer(x, cos, sin, causal)
        x = self.model.norm(x)
        return self.lm_head(x if keep is None else x[keep])


def masked_loss(model, x, y, mask, all_logits=False):
    """The mean cross-entropy of model's predictions of y at the positions
    mask (0 or 1, x's shape) selects, 0 when it selects none; logits are
    computed at those positions only, or, with all_logits (the trainer's
    way until this one; train/flops.py compares), at every position and
    weighted by the mask."""
    if all_logits:
        logits = model(x)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none")
        m = mask.reshape(-1)
        return (loss * m).sum() / m.sum().clamp(min=1.0)
    keep = mask > 0
    logits = model(x, keep)
    return F.cross_entropy(logits.float(), y[keep], reduction="sum") / keep.sum().clamp(min=1)


# ---------------------------------------------------------------- export

DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def write_safetensors(path, tensors, metadata=None):
    """The safetensors format: 8-byte little-endian header length, JSON header,
    raw little-endian tensor bytes (no Python package needed); metadata (a
    dict of strings) becomes the header's __metadata__."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for raw in blobs:
            f.write(raw)


def read_safetensors(path):
    """Reads one safetensors file (the layout write_safetensors writes) into F32
    tensors by name: BF16 is widened exactly, as the Go engine does."""
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


CONFIG_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
               "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps", "rope_theta",
               "tie_word_embeddings", "bos_token_id", "eos_token_id")


def load_export(directory):
    """The model config (train.py's cfg) and F32 state dict of an export
    (config.json plus model*.safetensors, sharded or not), e.g. weights/default."""
    with open(os.path.join(directory, "config.json")) as f:
        hf = json.load(f)
    cfg = {k: hf[k] for k in CONFIG_KEYS}
    sd = {}
    for name in sorted(os.listdir(directory)):
        if name.startswith("model") and name.endswith(".safetensors"):
            sd.update(read_safetensors(os.path.join(directory, name)))
    if not sd:
        raise ValueError(f"{directory}: no model*.safetensors")
    if cfg["tie_word_embeddings"]:
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
    return cfg, sd


def export(model, cfg, shard_mib, tokenizer, out, dtype, metadata=None):
    """Writes the Go engine's files into out: model*.safetensors in dtype
    (each file's __metadata__ is metadata, when given), config.json,
    tokenizer.json; returns the names of the files written."""
    sd = {k: v.to(dtype) for k, v in model.state_dict().items()}
    if cfg["tie_word_embeddings"]:
        sd.pop("lm_head.weight", None)
    limit = int(shard_mib * 2 ** 20)
    shards, cur, size = [], {}, 0
    for name, t in sd.items():
        n = t.numel() * t.element_size()
        if cur and size + n > limit:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = t
        size += n
    shards.append(cur)
    for f in os.listdir(out):
        if f.startswith("model") and f.endswith((".safetensors", ".safetensors.index.json")):
            os.remove(os.path.join(out, f))
    if len(shards) == 1:
        write_safetensors(os.path.join(out, "model.safetensors"), shards[0], metadata)
        written = ["model.safetensors"]
    else:
        weight_map, written = {}, []
        for i, shard in enumerate(shards):
            fname = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
            write_safetensors(os.path.join(out, fname), shard, metadata)
            weight_map.update({name: fname for name in shard})
            written.append(fname)
        total = sum(t.numel() * t.element_size() for t in sd.values())
        index = {"metadata": {"total_size": total, **{str(k): str(v) for k, v in (metadata or {}).items()}},
                 "weight_map": weight_map}
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=1)
        written.append("model.safetensors.index.json")
    hf = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "torch_dtype": {torch.bfloat16: "bfloat16", torch.float32: "float32"}[dtype],
        **{k: cfg[k] for k in CONFIG_KEYS},
        "hidden_act": "silu", "attention_bias": False, "mlp_bias": False, "rope_scaling": None,
    }
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hf, f, indent=1)
    with open(tokenizer, "rb") as src, open(os.path.join(out, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())
    return written + ["config.json", "tokenizer.json"]


def plot_loss(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot([r[1] for r in rows], [r[2] for r in rows], label="train")
    ev = [r for r in rows if r[3] is not None]
    ax.plot([r[1] for r in ev], [r[3] for r in ev], "o-", label="held-out")
    ax.set_xlabel("tokens seen (targets)")
    ax.set_ylabel("loss (nats/token)")
    ax.set_yscale("log")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return True


def model_card(out, cfg, args, params, rows, steps, tokens, device, elapsed):
    last_eval = next((r[3] for r in reversed(rows) if r[3] is not None), None)
    lines = [
        "# ndbg default model", "",
        "A LLaMA-architecture decoder trained from scratch by `train/train.py` on DSL trajectories made",
        "by `ndbg data` from real CPython traces of generated programs (no CRUXEval program is trained on).", "",
        "| | |", "|---|---|",
        f"| parameters | {params:,} |",
        f"| layers / hidden / heads / kv heads / ffn | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / "
        f"{cfg['num_attention_heads']} / {cfg['num_key_value_heads']} / {cfg['intermediate_size']} |",
        f"| vocabulary | {cfg['vocab_size']} (byte-level BPE, tokenizer.json) |",
        f"| context | {cfg['max_position_embeddings']} |",
        f"| data | {args.data} |",
        f"| seed | {args.seed} |",
        f"| steps | {steps} |",
        f"| tokens seen (loss targets) | {tokens:,} |",
        (f"| batch, block | about {args.batch_tokens} tokens of trajectories of about one length, {args.block} |"
         if args.batch_tokens else f"| batch x block | {args.batch_size} x {args.block} |"),
        f"| optimizer | AdamW lr {args.lr} wd {args.weight_decay}, warmup {args.warmup} steps, cosine to {args.min_lr_ratio}x, clip {args.clip} |",
        f"| device | {device} |",
        f"| wall time | {elapsed / 60:.1f} min |",
        f"| final held-out loss | {last_eval:.4f} |" if last_eval is not None else "| final held-out loss | n/a |",
        f"| Python (traces) | {args.python_version} |", "",
        "![loss](loss.png)", "",
        "## Evaluation", "",
        "See `bench/RESULTS.md` (next-state exact match by action and component, from `ndbg eval`).", "",
    ]
    if device.type == "cpu":
        lines += [
            "## What a GPU run would change", "",
            f"This model saw {tokens:,} tokens on a CPU: far too few for its size, and its held-out loss was",
            "still falling (loss.png). A GPU machine sees hundreds of millions of tokens in twenty minutes:",
            "`PY=python train/make_default.sh DIR --layers 8 --hidden 512 --heads 8 --steps 20000 --batch-tokens 131072 --block 2048`",
            "(about 25M parameters, within the 48 MiB BF16 budget) would train past the format and the control",
            "flow, which a small CPU run learns first, to the values of locals and return values, which it gets",
            "right far less often.", "",
        ]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines))


# ---------------------------------------------------------------- training

def make_optimizer(model, lr, weight_decay, device):
    """AdamW, β 0.9/0.95, weight decay on the matrices only."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    fused = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=(0.9, 0.95), eps=1e-8, **fused)


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    p = min(1.0, (step - args.warmup) / max(1, args.steps - args.warmup))
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * p)))


@torch.no_grad()
def evaluate(model, split, args, device, pad_id):
    model.eval()
    rng = np.random.default_rng(12345)  # the same held-out batches every time
    total = 0.0
    for _ in range(args.eval_batches):
        x, y, m = (t.to(device) for t in split.batch(rng, args.batch_size, args.block, pad_id))
        with autocast(device):
            total += masked_loss(model, x, y, m).item()
    model.train()
    return total / args.eval_batches


def autocast(device):
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return torch.autocast("cpu", enabled=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory from `ndbg tokenize`")
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json used for --data")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=0, help="0: same as --heads")
    ap.add_argument("--ffn", type=int, default=0, help="0: about 8/3 hidden, rounded to 64")
    ap.add_argument("--block", type=int, default=1024)
    ap.add_argument("--tie", action="store_true", help="tie embeddings and output head")
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--batch-tokens", type=int, default=0,
                    help="length-bucketed batches of about this many tokens instead of --batch-size random rows (0: off)")
    ap.add_argument("--steps", type=int, default=1000, help="planned steps (cosine length)")
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (and export) after this long")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--ckpt-every", type=int, default=200)
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    ap.add_argument("--export-dtype", choices=["bf16", "f32"], default="bf16")
    ap.add_argument("--shard-mib", type=int, default=15)
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args()

    ddp = "RANK" in os.environ
    rank, world = 0, 1
    if ddp:
        torch.distributed.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
    else:
        device = torch.device("cpu")
        torch.set_num_threads(args.threads or os.cpu_count() or 1)
        tune_malloc()
    main_proc = rank == 0
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed * 1000 + rank)

    with open(os.path.join(args.data, "meta.json")) as f:
        meta = json.load(f)
    args.python_version = meta.get("python", "unknown")
    train, val = Split(args.data, "train"), Split(args.data, "val")
    pad_id = meta["pad_id"]
    heads = args.heads
    cfg = {
        "vocab_size": meta["vocab_size"], "hidden_size": args.hidden,
        "intermediate_size": args.ffn or (int(args.hidden * 8 / 3) + 63) // 64 * 64,
        "num_hidden_layers": args.layers, "num_attention_heads": heads,
        "num_key_value_heads": args.kv_heads or heads, "head_dim": args.hidden // heads,
        "max_position_embeddings": args.block, "rms_norm_eps": 1e-5, "rope_theta": args.rope_theta,
        "tie_word_embeddings": args.tie, "bos_token_id": meta["bos_id"], "eos_token_id": meta["eos_id"],
    }
    model = Llama(cfg).to(device)
    params = sum(p.numel() for p in model.parameters())
    opt = make_optimizer(model, args.lr, args.weight_decay, device)
    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    step, tokens, rows, elapsed0 = 0, 0, [], 0.0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location=device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        step, tokens, rows, elapsed0 = ck["step"], ck["tokens"], ck["rows"], ck["elapsed"]
        rng = np.random.default_rng(args.seed * 1000 + rank + step)
        if main_proc:
            print(f"resumed at step {step}, {tokens:,} tokens", flush=True)
    net = torch.nn.parallel.DistributedDataParallel(model) if ddp else model
    if main_proc:
        print(f"model: {params:,} parameters, config {json.dumps(cfg)}", flush=True)
        print(f"data: {train.n:,} train / {val.n:,} held-out trajectories, {len(train.tokens):,} tokens; device {device}, world {world}", flush=True)

    def save():
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "tokens": tokens,
                    "rows": rows, "elapsed": elapsed0 + time.time() - t0, "cfg": cfg}, ckpt_path + ".tmp")
        os.replace(ckpt_path + ".tmp", ckpt_path)

    t0 = time.time()
    t_log, tok_log = t0, tokens
    while step < args.steps:
        if args.max_minutes and (time.time() - t0) / 60 >= args.max_minutes:
            if main_proc:
                print(f"time budget of {args.max_minutes} min reached at step {step}", flush=True)
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args)
        if args.batch_tokens:
            b = train.bucketed_batch(rng, args.batch_tokens, args.block, pad_id)
        else:
            b = train.batch(rng, args.batch_size, args.block, pad_id)
        x, y, m = (t.to(device) for t in b)
        with autocast(device):
            loss = masked_loss(net, x, y, m)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        step += 1
        tokens += int(m.sum().item()) * world
        eval_loss = None
        if step % args.eval_every == 0 or step == args.steps:
            eval_loss = evaluate(model, val, args, device, pad_id)
        if main_proc:
            rows.append((step, tokens, loss.item(), eval_loss))
            if step % args.log_every == 0 or eval_loss is not None:
                now = time.time()
                tps = (tokens - tok_log) / max(now - t_log, 1e-9)
                t_log, tok_log = now, tokens
                ev = f" held-out {eval_loss:.4f}" if eval_loss is not None else ""
                print(f"step {step}/{args.steps} loss {loss.item():.4f}{ev} lr {lr_at(step - 1, args):.2e} "
                      f"norm {norm:.2f} tokens {tokens:,} {tps:,.0f} tok/s {(now - t0) / 60:.1f} min", flush=True)
            if step % args.ckpt_every == 0:
                save()
    if main_proc:
        if not rows or rows[-1][3] is None:
            ev = evaluate(model, val, args, device, pad_id)
            rows.append((step, tokens, rows[-1][2] if rows else float("nan"), ev))
            print(f"final held-out loss {ev:.4f}", flush=True)
        save()
        elapsed = elapsed0 + time.time() - t0
        export(model, cfg, args.shard_mib, args.tokenizer, args.out, torch.bfloat16 if args.export_dtype == "bf16" else torch.float32)
        with open(os.path.join(args.out, "loss.csv"), "w") as f:
            f.write("step,tokens,train_loss,heldout_loss\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]:.5f},{'' if r[3] is None else f'{r[3]:.5f}'}\n")
        plot_loss(rows, os.path.join(args.out, "loss.png"))
        model_card(args.out, cfg, args, params, rows, step, tokens, device, elapsed)
        print(f"exported to {args.out}: {params:,} parameters, {step} steps, {tokens:,} tokens, {elapsed / 60:.1f} min", flush=True)
    if ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
