#!/usr/bin/env python3
"""Turns what came back from the GPU run into a model folder for the gate:

  reassemble.py FILES_AT DEST

FILES_AT is the folder the device tool put $OUT's files in (model/ and
run.tgz; train/gpu/RUN.md). DEST gets the checkpoint as the Go engine loads
it (the shards, their index, config.json, tokenizer.json), plus loss.csv and
training.json from the report (continuous.py and promote.py read them), the
whole report under DEST/run/, and a model card (README.md).

Checked, each with a clear error: the index names every shard and every
shard is there; every shard and the index carry the same step (an export
caught half way would mix two); every tensor the index maps is in its
shard (the Go engine checks this again when it loads the folder); the
config names the architecture the engine runs. The model is not loaded
here: train/gpu/RUN.md's next step, the gate, loads and evaluates it.
"""
import json
import os
import shutil
import struct
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def header(path):
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: shorter than a safetensors header")
        n = struct.unpack("<Q", raw)[0]
        if n > 100 << 20:
            raise ValueError(f"{path}: header of {n:,} bytes")
        h = json.loads(f.read(n))
    size = os.path.getsize(path)
    end = max((v["data_offsets"][1] for k, v in h.items() if k != "__metadata__"), default=0)
    if 8 + n + end != size:
        raise ValueError(f"{path}: {size:,} bytes, the header says {8 + n + end:,} (cut short?)")
    return h


def check_model(model):
    """The step the checkpoint in model was exported at; raises on any inconsistency."""
    for name in ("config.json", "tokenizer.json"):
        if not os.path.exists(os.path.join(model, name)):
            raise ValueError(f"{model}: no {name}")
    with open(os.path.join(model, "config.json")) as f:
        cfg = json.load(f)
    if cfg.get("model_type") != "llama":
        raise ValueError(f"{model}/config.json: model_type {cfg.get('model_type')!r}, not llama")
    index_path = os.path.join(model, "model.safetensors.index.json")
    steps = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        steps["index"] = index.get("metadata", {}).get("step")
        shards = sorted(set(index["weight_map"].values()))
        for s in shards:
            p = os.path.join(model, s)
            if not os.path.exists(p):
                raise ValueError(f"{model}: the index names {s}, which is not there")
            h = header(p)
            steps[s] = h.get("__metadata__", {}).get("step")
            missing = [t for t, f in index["weight_map"].items() if f == s and t not in h]
            if missing:
                raise ValueError(f"{p}: lacks {missing[:3]} that the index maps to it")
        extra = sorted(n for n in os.listdir(model) if n.endswith(".safetensors") and n not in shards)
        if extra:
            raise ValueError(f"{model}: {extra} are not in the index")
    elif os.path.exists(os.path.join(model, "model.safetensors")):
        steps["model.safetensors"] = header(os.path.join(model, "model.safetensors")).get("__metadata__", {}).get("step")
    else:
        raise ValueError(f"{model}: neither model.safetensors nor model.safetensors.index.json")
    if len(set(steps.values())) != 1:
        raise ValueError(f"{model}: files from different exports (steps {steps}): the run was cut while exporting")
    return next(iter(steps.values())), cfg


def card(dest, t, cfg):
    d = t.get("data", {})
    lines = [
        "# ndbg model trained on a GPU", "",
        "A LLaMA-architecture decoder trained from scratch by `train/gpu/gpu_train.py` (`train/gpu/run.sh`, one",
        "device call: train/gpu/RUN.md) on DSL trajectories made by `ndbg data` from real CPython "
        f"{d.get('python', '3.11')} traces of generated programs (no CRUXEval program is trained on).", "",
        "| | |", "|---|---|",
        f"| parameters | {t['params']:,} |",
        f"| layers / hidden / heads / kv heads / ffn | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / "
        f"{cfg['num_attention_heads']} / {cfg['num_key_value_heads']} / {cfg['intermediate_size']} |",
        f"| vocabulary | {cfg['vocab_size']} (weights/default's tokenizer.json) |",
        f"| context | {cfg['max_position_embeddings']} |",
        f"| device | {t.get('gpu', t.get('device'))}, torch {t.get('torch')} |",
        f"| training | {t['steps_trained']:,} steps in {t['train_seconds']} s (exported: step {t['step']:,}); "
        f"{t['loss_tokens_trained']:,} loss tokens of {t['tokens_processed']:,} |",
        f"| throughput | {t['tokens_per_s']:,} tokens/s, {t['model_tflops_per_s']} TFLOP/s of model FLOPs, MFU "
        f"{t.get('mfu_nominal')} of the nominal peak, {t.get('mfu_measured')} of the measured product |",
        f"| attention / compile | {t.get('attention')} / {t.get('compile')} |",
        f"| data | {d.get('chunks_fresh')} fresh chunks ({d.get('tokens_fresh', 0):,} loss tokens), "
        f"{d.get('chunks_repeated')} taken again ({d.get('tokens_repeated', 0):,}) |",
        f"| held-out loss (seed 2) | {t.get('heldout_loss')} |",
        f"| stopped | {t.get('stopped')} |", "",
        "The run's log, loss curve (loss.csv, run/curve.csv) and CUDA checks are in run/.", "",
        "Before it ships: `train/promote.sh --model DIR` (the gate on generated held-out programs, and the",
        "calibration check): train/README.md.", "",
    ]
    with open(os.path.join(dest, "README.md"), "w") as f:
        f.write("\n".join(lines))


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, dest = argv
    model = os.path.join(src, "model")
    if not os.path.isdir(model):
        sys.exit(f"reassemble: {src} has no model/ folder: nothing came back, or FILES_AT is wrong")
    try:
        step, cfg = check_model(model)
    except (ValueError, KeyError, json.JSONDecodeError) as e:
        sys.exit(f"reassemble: {e}")
    os.makedirs(dest, exist_ok=True)
    for n in os.listdir(model):
        shutil.copyfile(os.path.join(model, n), os.path.join(dest, n))
    report = os.path.join(src, "run.tgz")
    t = None
    if os.path.exists(report):
        run_dir = os.path.join(dest, "run")
        shutil.rmtree(run_dir, ignore_errors=True)
        with tarfile.open(report) as tar:
            for m in tar.getmembers():
                if not m.isfile() or m.name.startswith(("/", "..")) or "/../" in m.name:
                    continue
                tar.extract(m, run_dir)
        for n in ("loss.csv", "training.json"):
            if os.path.exists(os.path.join(run_dir, n)):
                shutil.copyfile(os.path.join(run_dir, n), os.path.join(dest, n))
        if os.path.exists(os.path.join(dest, "training.json")):
            with open(os.path.join(dest, "training.json")) as f:
                t = json.load(f)
    if t is None:
        print("reassemble: WARNING: no run.tgz/training.json: the model has no history (loss.csv, tokens)",
              file=sys.stderr)
    elif t.get("step") != int(step or -1):
        print(f"reassemble: WARNING: the report is of step {t.get('step')}, the weights of step {step} "
              "(the run was cut after the last export)", file=sys.stderr)
    if t is not None:
        card(dest, t, cfg)
    print(f"reassembled step {step} into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
