#!/usr/bin/python3
"""Build small random LLaMA-architecture checkpoints and their reference logits.

Run with Debian's interpreter (torch 1.13, no transformers):

    /usr/bin/python3 model/testdata/make_reference.py [OUTDIR]

OUTDIR defaults to the directory of this script. For every case it writes
OUTDIR/<case>/config.json, the weights as safetensors (one file, or two shards
plus model.safetensors.index.json) and OUTDIR/<case>/reference.safetensors
holding:

    tokens  F32 [T]          the tokens fed: a random prompt of P tokens, then
                             the greedy continuation (argmax of each row)
    logits  F32 [T, vocab]   logits after each of the T tokens
    prompt  F32 [1]          P, the prompt length (rows < P come from prefill)

(token ids are small integers, exact in F32, so one reader handles all.)

The forward pass is a plain transcription of Hugging Face's LlamaForCausalLM /
CwmForCausalLM (transformers' modeling_llama.py, modeling_cwm.py,
modeling_rope_utils.py, masking_utils.py):

  - RMSNorm: x * rsqrt(mean(x^2) + eps) * weight
  - RoPE: inv_freq = 1 / theta^(arange(0, d, 2)/d) in float32, optionally
    rescaled by rope_type "llama3" (_compute_llama3_parameters); cos/sin of
    position * inv_freq computed in float32, applied with rotate_half
    (pairs (i, i + d/2)).
  - GQA: repeat_kv (query head h reads KV head h // (n_heads / n_kv_heads)).
  - attention scaling head_dim^-0.5, causal mask kv <= q; sliding layers also
    require kv > q - sliding_window (sliding_window_overlay).
  - MLP: down(silu(gate(x)) * up(x)); residual around attention and MLP.
  - lm_head, or embed_tokens when tie_word_embeddings.

Everything after the RoPE tables runs in float64 on the checkpoint's weights
(BF16 weights upcast exactly), so the reference carries no float32 rounding of
its own. The whole sequence is run in one causal pass, independent of any KV
cache.
"""
import json
import math
import os
import struct
import sys

import torch

PROMPT_LEN = 12
DECODE_STEPS = 32

CASES = [
    # Multi-head attention, untied head, the LLaMA-2 shape in miniature.
    dict(name="mha", seed=1, shards=1, config=dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, intermediate_size=96, vocab_size=256, rms_norm_eps=1e-5,
        rope_theta=10000.0, max_position_embeddings=64, tie_word_embeddings=False)),
    # Grouped-query attention, head_dim * heads != hidden, tied embeddings.
    dict(name="gqa_tied", seed=2, shards=1, config=dict(
        model_type="llama", hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, intermediate_size=96, vocab_size=256,
        rms_norm_eps=1e-6, rope_theta=500000.0, max_position_embeddings=64,
        tie_word_embeddings=True)),
    # CWM in miniature: GQA, llama3 RoPE scaling (all three frequency bands are
    # hit with head_dim 16 and original context 64), sliding window 8 on layers
    # i % 4 != 0, two safetensors shards.
    dict(name="cwm_sliding", seed=3, shards=2, config=dict(
        model_type="cwm", hidden_size=64, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, intermediate_size=96, vocab_size=256,
        rms_norm_eps=1e-5, rope_theta=1000000.0, max_position_embeddings=64,
        tie_word_embeddings=False, sliding_window=8,
        layer_types=["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(4)],
        rope_scaling=dict(rope_type="llama3", factor=16.0, low_freq_factor=1.0,
                          high_freq_factor=4.0, original_max_position_embeddings=64))),
]

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16}


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


def random_weights(cfg, seed):
    """Random weights scaled so that activations stay O(1) through the layers."""
    g = torch.Generator().manual_seed(seed)
    H, F, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)

    def lin(out, inp):
        return torch.randn(out, inp, generator=g) / math.sqrt(inp)

    def norm(n):
        return 1.0 + 0.2 * torch.randn(n, generator=g)

    w = {"model.embed_tokens.weight": torch.randn(V, H, generator=g)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "self_attn.q_proj.weight"] = lin(nh * hd, H)
        w[p + "self_attn.k_proj.weight"] = lin(nkv * hd, H)
        w[p + "self_attn.v_proj.weight"] = lin(nkv * hd, H)
        w[p + "self_attn.o_proj.weight"] = lin(H, nh * hd)
        w[p + "post_attention_layernorm.weight"] = norm(H)
        w[p + "mlp.gate_proj.weight"] = lin(F, H)
        w[p + "mlp.up_proj.weight"] = lin(F, H)
        w[p + "mlp.down_proj.weight"] = lin(H, F)
    w["model.norm.weight"] = norm(H)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = lin(V, H)
    return w


def inv_freq_hf(cfg):
    """RoPE inverse frequencies, float32, as modeling_rope_utils computes them."""
    d = head_dim(cfg)
    base = cfg["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor = rs["factor"]
        low_freq_factor = rs["low_freq_factor"]
        high_freq_factor = rs["high_freq_factor"]
        old_context_len = rs["original_max_position_embeddings"]
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
        inv_freq = torch.where(is_medium, smoothed, inv_freq_llama)
    return inv_freq


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward(cfg, w, tokens):
    """Logits [T, vocab] (float64) for one causal pass over tokens."""
    T = len(tokens)
    H = cfg["hidden_size"]
    nh, nkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    eps = cfg["rms_norm_eps"]
    W = {k: v.double() for k, v in w.items()}

    # cos/sin in float32 exactly as the rotary embedding module does.
    pos = torch.arange(T, dtype=torch.int64).float()
    freqs = torch.outer(pos, inv_freq_hf(cfg))  # [T, hd/2], float32
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()

    q_idx = torch.arange(T)[:, None]
    kv_idx = torch.arange(T)[None, :]
    causal = kv_idx <= q_idx
    layer_types = cfg.get("layer_types") or ["full_attention"] * cfg["num_hidden_layers"]

    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]  # [T, H]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=0)
        v = v.repeat_interleave(rep, dim=0)
        mask = causal
        if layer_types[i] == "sliding_attention":
            mask = causal & (kv_idx > q_idx - cfg["sliding_window"])
        scores = (q @ k.transpose(1, 2)) * hd ** -0.5
        scores = scores.masked_fill(~mask, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v  # [nh, T, hd]
        att = att.transpose(0, 1).reshape(T, nh * hd)
        x = x + att @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        gate = h @ W[p + "mlp.gate_proj.weight"].T
        up = h @ W[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return x @ head.T


ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int32: "I32"}


def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    """Minimal safetensors writer: u64 LE header length, JSON header, raw data."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name]
        b = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_case(out, case, dtype_name):
    cfg = dict(case["config"])
    cfg["architectures"] = ["CwmForCausalLM" if cfg["model_type"] == "cwm" else "LlamaForCausalLM"]
    cfg["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16"}[dtype_name]
    cfg["hidden_act"] = "silu"
    d = os.path.join(out, f"{case['name']}_{dtype_name.lower()}")
    os.makedirs(d, exist_ok=True)
    w = {k: v.to(DTYPES[dtype_name]) for k, v in random_weights(cfg, case["seed"]).items()}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True)
        f.write("\n")
    names = sorted(w)
    if case["shards"] == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), w)
    else:
        n = case["shards"]
        weight_map = {}
        for s in range(n):
            fn = f"model-{s + 1:05d}-of-{n:05d}.safetensors"
            part = {k: w[k] for j, k in enumerate(names) if j % n == s}
            write_safetensors(os.path.join(d, fn), part)
            weight_map.update({k: fn for k in part})
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1, sort_keys=True)
            f.write("\n")

    # Prompt, then greedy continuation; the full sequence is re-run in one
    # causal pass at every step, so no cache is involved.
    g = torch.Generator().manual_seed(100 + case["seed"])
    tokens = torch.randint(0, cfg["vocab_size"], (PROMPT_LEN,), generator=g).tolist()
    for _ in range(DECODE_STEPS):
        logits = forward(cfg, w, tokens)
        tokens.append(int(torch.argmax(logits[-1])))
    logits = forward(cfg, w, tokens)
    write_safetensors(os.path.join(d, "reference.safetensors"), {
        "tokens": torch.tensor(tokens, dtype=torch.float32),
        "logits": logits.float(),
        "prompt": torch.tensor([PROMPT_LEN], dtype=torch.float32),
    })
    return d


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.set_num_threads(1)
    for case in CASES:
        for dt in DTYPES:
            print(write_case(out, case, dt))


if __name__ == "__main__":
    main()
