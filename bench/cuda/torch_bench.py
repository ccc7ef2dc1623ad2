#!/usr/bin/env python3
"""PyTorch baseline for bench/cuda: Hugging Face LlamaForCausalLM with random
BF16 weights at the same presets as the Go benchmark (1.8b, 32b), eager and
torch.compile'd, measuring prefill tokens/s (one forward over the prompt) and
greedy decode tokens/s (one token per step over a static KV cache).

Run on the GPU machine (PyTorch and transformers are there):

    python3 bench/cuda/torch_bench.py --models 1.8b,32b --prefill 512 --decode 32 --json $OUT/torch.json

The presets mirror model.Preset in Go (model/config.go); keep them in sync.
"""
import argparse
import json
import sys
import time

import torch

PRESETS = {
    "1.8b": dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16,
                 head_dim=128, intermediate_size=5632, vocab_size=128256, rms_norm_eps=1e-5, rope_theta=10000.0,
                 max_position_embeddings=4096),
    # CWM's shape; its sliding-window layers are not modelled by LlamaForCausalLM
    # (attention over <= 8k tokens is the same work at these prompt lengths).
    "32b": dict(hidden_size=6144, num_hidden_layers=64, num_attention_heads=48, num_key_value_heads=8,
                head_dim=128, intermediate_size=21504, vocab_size=128256, rms_norm_eps=1e-5, rope_theta=1e6,
                rope_scaling=dict(rope_type="llama3", factor=16.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                  original_max_position_embeddings=8192),
                max_position_embeddings=131072),
}


def build(name):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(**PRESETS[name], tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    # Build directly in bf16 on the GPU: an fp32 32b model would not fit.
    prev = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = LlamaForCausalLM(cfg)
    finally:
        torch.set_default_dtype(prev)
    model.eval()
    return model, cfg


def sync():
    torch.cuda.synchronize()


@torch.inference_mode()
def measure(model, cfg, prefill, decode, compiled):
    from transformers import StaticCache
    ids = torch.randint(0, cfg.vocab_size, (1, prefill), device="cuda")
    step = model
    if compiled:
        step = torch.compile(model, mode="reduce-overhead", fullgraph=False)

    def new_cache():
        return StaticCache(config=cfg, max_batch_size=1, max_cache_len=prefill + decode + 8,
                           device="cuda", dtype=torch.bfloat16)

    def run_prefill(cache):
        pos = torch.arange(prefill, device="cuda")
        return model(input_ids=ids, past_key_values=cache, cache_position=pos, use_cache=True).logits

    def run_decode(cache, tok, steps):
        for i in range(steps):
            pos = torch.tensor([prefill + i], device="cuda")
            logits = step(input_ids=tok, past_key_values=cache, cache_position=pos, use_cache=True).logits
            tok = logits[:, -1:].argmax(-1)
        return tok

    # Warm-up (compiles when compiled).
    cache = new_cache()
    logits = run_prefill(cache)
    run_decode(cache, logits[:, -1:].argmax(-1), min(decode, 4))
    sync()

    cache = new_cache()
    t0 = time.perf_counter()
    logits = run_prefill(cache)
    sync()
    prefill_s = time.perf_counter() - t0
    tok = logits[:, -1:].argmax(-1)
    t0 = time.perf_counter()
    run_decode(cache, tok, decode)
    sync()
    decode_s = time.perf_counter() - t0
    return prefill / prefill_s, decode / decode_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="1.8b,32b")
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--modes", default="eager,compiled")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    results = []
    for name in args.models.split(","):
        model, cfg = build(name)
        params = sum(p.numel() for p in model.parameters())
        for mode in args.modes.split(","):
            try:
                pf, dc = measure(model, cfg, args.prefill, args.decode, mode == "compiled")
                r = dict(model=name, mode=mode, params=params, prefill_tokens=args.prefill,
                         prefill_tok_s=pf, decode_steps=args.decode, decode_tok_s=dc,
                         decode_weight_gb_s=dc * params * 2 / 1e9)
            except Exception as e:  # report and go on: one mode failing must not hide the others
                r = dict(model=name, mode=mode, error=repr(e))
            results.append(r)
            print(json.dumps(r), flush=True)
        del model
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
