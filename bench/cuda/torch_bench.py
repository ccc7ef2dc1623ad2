#!/usr/bin/env python3
"""PyTorch baseline for bench/cuda: Hugging Face LlamaForCausalLM with random
BF16 weights at the same presets as the Go benchmark (1.8b, 32b), eager and
torch.compile'd, measuring prefill tokens/s (one forward over the prompt) and
greedy decode tokens/s (generate; the compiled mode uses a static KV cache
and CUDA graphs).

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
                 head_dim=128, intermediate_size=5632, vocab_size=128256, rms_norm_eps=1e-5,
                 max_position_embeddings=4096),
    # CWM's shape. Its llama3 RoPE scaling and sliding-window layers are left
    # out: they do not change the work at these prompt lengths, and their
    # config keys differ between transformers 4 and 5.
    "32b": dict(hidden_size=6144, num_hidden_layers=64, num_attention_heads=48, num_key_value_heads=8,
                head_dim=128, intermediate_size=21504, vocab_size=128256, rms_norm_eps=1e-5,
                max_position_embeddings=131072),
}


def build(name):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(**PRESETS[name], tie_word_embeddings=False, attention_bias=False, mlp_bias=False)
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
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model, cfg


def sync():
    torch.cuda.synchronize()


@torch.inference_mode()
def measure(model, cfg, prefill, decode, compiled):
    """Prefill: one forward over the prompt. Decode: greedy generate of
    decode+1 tokens minus a generate of 1 token (which is the prefill), so
    only the decode steps are timed. Compiled: torch.compile of forward
    (mode reduce-overhead, CUDA graphs) with a static cache, the recipe of
    the transformers docs."""
    ids = torch.randint(0, cfg.vocab_size, (1, prefill), device="cuda")
    kw = dict(do_sample=False)
    if compiled:
        model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=False)
        kw["cache_implementation"] = "static"

    def gen(n):
        sync()
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=n, min_new_tokens=n, **kw)
        sync()
        assert out.shape[1] == prefill + n, out.shape
        return time.perf_counter() - t0

    def forward():
        sync()
        t0 = time.perf_counter()
        model(input_ids=ids, use_cache=False)
        sync()
        return time.perf_counter() - t0

    # Warm-up (compiles when compiled; twice so CUDA graphs are captured).
    forward()
    gen(4)
    gen(4)
    prefill_s = min(forward() for _ in range(3))
    one = min(gen(1) for _ in range(2))
    full = gen(decode + 1)
    if compiled:
        del model.forward  # back to the class's forward for the next mode
    return prefill / prefill_s, decode / max(full - one, 1e-9)


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
