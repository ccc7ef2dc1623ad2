"""Writes a safetensors file with PyTorch's own dtype conversions, as an
independent oracle for the Go reader and converters.

Usage: /usr/bin/python3 make_conformance.py OUTDIR [GODIR]

It writes OUTDIR/conformance.safetensors (tensors of F32, F16, BF16, I32, I64,
deliberately unpadded so that some tensors start unaligned) and
OUTDIR/conformance.json, which holds for each tensor its dtype, shape and the
float32 bit patterns torch gives when widening it (integer values for I32
and I64), plus for the conversion
checks the float32 source bits and torch's rounded F16 / BF16 bits. The
safetensors writer is the format itself: an 8-byte little-endian header
length, the JSON header, the raw little-endian bytes.

With GODIR, it also reads the checkpoint that the Go writer put there
(model.safetensors or model.safetensors.index.json plus shards) with an
independent reader built on torch.frombuffer, checks the format's rules, and
compares every value with GODIR/expected.json; it exits non-zero on any
difference.
"""
import json
import struct
import sys

import torch

torch.manual_seed(7)

special = [0.0, -0.0, 1.0, -1.0, 0.5, 3.140625, float("inf"), float("-inf"), float("nan"),
           65504.0, 65520.0, 70000.0, -70000.0, 2.0 ** -24, 2.0 ** -25, 2.0 ** -14, 2.0 ** -133,
           1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11,
           3.4e38, -3.4e38, 1e-45, 1.17549435e-38, 0.1, -0.2, 1e-3, 1e4]
src = torch.cat([torch.tensor(special, dtype=torch.float32),
                 torch.randn(200) * torch.logspace(-6, 6, 200),
                 torch.randn(100)])

# Bit patterns that probe the rounding edges directly: every 16-bit pattern
# above and below half-way for a few exponents.
edges = []
for base in (0x3F800000, 0x47000000, 0x33800000, 0x00400000):
    for low in (0x7FFF, 0x8000, 0x8001, 0x18000, 0x17FFF, 0x0FFF, 0x1000, 0x1001, 0x3000):
        edges.append(base + low)
edge = torch.tensor(edges, dtype=torch.int64).to(torch.int32).view(torch.float32)
src = torch.cat([src, edge])


def raw(t):
    t = t.contiguous().reshape(-1)
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def f32bits(t):
    return t.float().reshape(-1).view(torch.int32).tolist()


tensors = {
    # Odd element counts so that later tensors start unaligned.
    "a.f16_odd": src[:3].to(torch.float16),
    "b.f32_unaligned": src[3:40].reshape(37),
    "c.bf16": src.to(torch.bfloat16).reshape(-1),
    "d.f16": src.to(torch.float16),
    "e.f32": src.reshape(1, -1),
    "f.scalar_bf16": torch.tensor(-2.5, dtype=torch.bfloat16),
    "g.empty_f32": torch.zeros(0, 3),
    "h.matrix_bf16": torch.randn(3, 5).to(torch.bfloat16),
    "i.tokens_i64": torch.tensor([0, 1, -1, 128255, 2 ** 40, -(2 ** 63)], dtype=torch.int64),
    "j.ids_i32": torch.tensor([[7, -7], [2 ** 31 - 1, -(2 ** 31)]], dtype=torch.int32),
}
names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
         torch.int32: "I32", torch.int64: "I64"}

header = {"__metadata__": {"format": "pt", "writer": "make_conformance.py"}}
blobs = []
off = 0
for name, t in tensors.items():
    b = raw(t)
    header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
    blobs.append(b)
    off += len(b)
hjson = json.dumps(header, separators=(",", ":")).encode()
if (8 + len(hjson)) % 2 == 0:
    hjson += b" "  # keep the data region odd-aligned on purpose
out = sys.argv[1]
with open(out + "/conformance.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(hjson)))
    f.write(hjson)
    for b in blobs:
        f.write(b)

expected = {
    "tensors": {n: {"dtype": names[t.dtype], "shape": list(t.shape),
                    **({"f32_bits": f32bits(t)} if t.is_floating_point() else {"ints": t.reshape(-1).tolist()})}
                for n, t in tensors.items()},
    "convert": {
        "f32_bits": f32bits(src),
        "bf16_bits": src.to(torch.bfloat16).view(torch.int16).reshape(-1).tolist(),
        "f16_bits": src.to(torch.float16).view(torch.int16).reshape(-1).tolist(),
    },
    "torch_version": torch.__version__,
}
with open(out + "/conformance.json", "w") as f:
    json.dump(expected, f)


def read_safetensors(path):
    """An independent reader: returns {name: float32 tensor}."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), path
    assert (8 + n) % 8 == 0, "%s: data region not 8-byte aligned" % path
    header = json.loads(data[8:8 + n].decode("utf-8"))
    header.pop("__metadata__", None)
    start = 8 + n
    kinds = {"F32": (torch.float32, 4), "F16": (torch.float16, 2), "BF16": (torch.bfloat16, 2)}
    spans = []
    out = {}
    for name, info in header.items():
        dtype, size = kinds[info["dtype"]]
        b, e = info["data_offsets"]
        count = 1
        for d in info["shape"]:
            count *= d
        assert e - b == count * size, name
        assert (start + b) % size == 0, "%s: %s not aligned" % (path, name)
        spans.append((b, e))
        raw = bytearray(data[start + b:start + e])
        if count == 0:
            t = torch.zeros(info["shape"], dtype=dtype)
        else:
            t = torch.frombuffer(raw, dtype=dtype).reshape(info["shape"])
        out[name] = t.float()
    pos = 0
    for b, e in sorted(spans):
        assert b == pos, "%s: gap or overlap at %d" % (path, b)
        pos = e
    assert start + pos == len(data), "%s: trailing bytes" % path
    return out


def verify_go(godir):
    import os
    index = os.path.join(godir, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        wm = json.load(open(index))["weight_map"]
        for shard in sorted(set(wm.values())):
            got = read_safetensors(os.path.join(godir, shard))
            for name in got:
                assert wm[name] == shard, name
            tensors.update(got)
        assert set(tensors) == set(wm), "index and shards disagree"
    else:
        tensors = read_safetensors(os.path.join(godir, "model.safetensors"))
    expected = json.load(open(os.path.join(godir, "expected.json")))
    assert set(tensors) == set(expected), (sorted(tensors), sorted(expected))
    for name, want in expected.items():
        t = tensors[name]
        assert list(t.shape) == want["shape"], name
        got = t.reshape(-1).view(torch.int32).tolist()
        want_bits = [b - (1 << 32) if b >= (1 << 31) else b for b in want["f32_bits"]]
        assert got == want_bits, "%s: values differ" % name
    cfg = json.load(open(os.path.join(godir, "config.json")))
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "model_type"):
        assert key in cfg, key
    print("verified %d Go-written tensors" % len(tensors))


if len(sys.argv) > 2:
    verify_go(sys.argv[2])
