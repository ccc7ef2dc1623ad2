"""Write a random-weight LLaMA model as GGUF for llama.cpp's llama-bench.

bench/llamacpp.sh calls this with the shape that `ndbg bench --shapes` prints
for one of package model's presets, so that llama.cpp and ndbg run the same
architecture (untied output head, no sliding windows, plain RoPE) on weights
of the same type. The values are random (normal, std 0.02, fixed seed):
throughput does not depend on them. The vocabulary is llama.cpp's "none"
tokenizer with the preset's size, so llama-bench draws random token ids from
the whole vocabulary as ndbg's bench does.

Needs numpy and llama.cpp's gguf-py (its source tree's gguf-py folder on
PYTHONPATH).

    python3 llamacpp_gguf.py '<shape json>' f32|bf16 OUT.gguf
"""

import json
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover - said to the user, not tested
    sys.exit("llamacpp_gguf.py: cannot import gguf: put llama.cpp's gguf-py folder on PYTHONPATH")


def random_matrix(rng, rows, cols, dtype):
    """A rows x cols matrix (Hugging Face layout: out x in) in dtype."""
    x = rng.standard_normal((rows, cols), dtype=np.float32) * np.float32(0.02)
    if dtype == "f32":
        return x, None
    # BF16 is the top half of the float32 bits (rounded to nearest even).
    bits = x.view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16), gguf.GGMLQuantizationType.BF16


def write(shape, dtype, path):
    h, layers, heads, kv_heads = shape["hidden"], shape["layers"], shape["heads"], shape["kv_heads"]
    head_dim, ffn, vocab = shape["head_dim"], shape["ffn"], shape["vocab"]
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("ndbg-bench-" + shape["model"])
    w.add_context_length(shape["context"])
    w.add_embedding_length(h)
    w.add_block_count(layers)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(shape["rope_theta"])
    w.add_layer_norm_rms_eps(shape["norm_eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model("none")
    w.add_vocab_size(vocab)

    rng = np.random.default_rng(1)
    ones = np.ones(h, dtype=np.float32)  # norms stay F32, as in llama.cpp's converter

    def matrix(name, rows, cols):
        data, raw = random_matrix(rng, rows, cols, dtype)
        w.add_tensor(name, data, raw_dtype=raw)

    matrix("token_embd.weight", vocab, h)
    for i in range(layers):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones)
        matrix(p + "attn_q.weight", heads * head_dim, h)
        matrix(p + "attn_k.weight", kv_heads * head_dim, h)
        matrix(p + "attn_v.weight", kv_heads * head_dim, h)
        matrix(p + "attn_output.weight", h, heads * head_dim)
        w.add_tensor(p + "ffn_norm.weight", ones)
        matrix(p + "ffn_gate.weight", ffn, h)
        matrix(p + "ffn_up.weight", ffn, h)
        matrix(p + "ffn_down.weight", h, ffn)
    w.add_tensor("output_norm.weight", ones)
    matrix("output.weight", vocab, h)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv):
    if len(argv) != 4 or argv[2] not in ("f32", "bf16"):
        sys.exit("usage: llamacpp_gguf.py '<shape json from ndbg bench --shapes>' f32|bf16 OUT.gguf")
    write(json.loads(argv[1]), argv[2], argv[3])


if __name__ == "__main__":
    main(sys.argv)
