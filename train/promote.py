#!/usr/bin/env python3
"""The promotion gate: the continuous run's latest checkpoint against the
shipped model (weights/default) on a frozen evaluation set, and the shipped
model replaced only when the checkpoint is better. Run through train/promote.sh:

  train/promote.sh [--check] [RUN_DIR]

The frozen set (FROZEN below; `ndbg eval`): next-state exact match on
generated programs of every default family (mixed included; long, drawn only
by name, is not: progen pins these programs) from seed 99 (held out from
training), pairs of every action kind along the training policy's
trajectories, plus the whole CRUXEval development split (next-state
pairs and CRUXEval-O/-I pass@1). Both models run the same binary with the same
arguments; the shipped model's figures are kept in RUN_DIR/gate, keyed by a
hash of its files, the binary and the arguments, so a later gate runs the
candidate alone. A running trainer is paused meanwhile (its CPU would slow
both) and resumed after.

Promoted only when all hold:
  - next-state exact match (all pairs) rises by at least 1 point;
  - no action kind's exact match falls by more than 1 point;
  - no promotion yet today (UTC; weights/default/training.json "promoted");
  - the safetensors files total at most 32 MB.
Then weights/default gets the export, its loss.csv and loss.png, a new model
card with the tokens seen and CPU-hours so far, training.json, and reference
logits from train/reference_logits.py; `go test -count=1 -run DefaultModel .`
must pass, else the previous files are put back. With --check it only compares.
Commit weights/default afterwards (the gate does not commit).
"""
import argparse
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT = os.path.join(ROOT, "weights", "default")
FROZEN = ["--seed", "99", "--n", "240", "--items", "dev", "--max-steps", "60", "--pairs", "policy",
          "--traj", "4", "--max-pairs", "32", "--workers", "2", "--sample-seed", "1"]
MIN_GAIN, MAX_DROP = 1.0, 1.0  # points of exact match
MAX_BYTES = 32_000_000
MODEL_FILES = ("model", ".safetensors")


def pct(t):
    return 100.0 * t["state"] / t["n"] if t and t["n"] else 0.0


def model_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith(MODEL_FILES[0]) and
                  (f.endswith(MODEL_FILES[1]) or f.endswith(".safetensors.index.json")))


def digest(paths, extra):
    h = hashlib.sha256()
    for p in paths:
        with open(p, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    h.update(json.dumps(extra).encode())
    return h.hexdigest()[:16]


def evaluate(ndbg, model_dir, out):
    """Runs the frozen evaluation of model_dir; returns ndbg eval's JSON summary."""
    t0 = time.time()
    r = subprocess.run([ndbg, "eval", "--model", model_dir, *FROZEN, "--json", out], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ndbg eval --model {model_dir} failed (exit {r.returncode}):\n{r.stdout[-2000:]}")
    with open(out) as f:
        res = json.load(f)
    res["gate_seconds"] = round(time.time() - t0, 1)
    return res


def figures(res, info):
    """The gate's table rows: name -> value (percent, or as labelled)."""
    nx = res["next_state"]
    f = {"next-state exact, all": pct(nx["all"]), "next-state exact, forward": pct(nx["forward"]),
         "next-state exact, inverse": pct(nx["inverse"])}
    for a in sorted(nx["by_action"]):
        f[f"  {a} ({nx['by_action'][a]['n']} pairs)"] = pct(nx["by_action"][a])
    for part in ("event", "line"):
        f[f"  {part} right"] = 100.0 * nx["all"][part] / max(nx["all"]["n"], 1)
    f["  locals right"] = 100.0 * nx["all"]["locals"] / max(nx["all"]["locals_n"], 1)
    f["  value right"] = 100.0 * nx["all"]["value"] / max(nx["all"]["value_n"], 1)
    for s, p in sorted((res.get("cruxeval") or {}).get("scores", {}).items()):
        f[f"CRUXEval {'-I' if s == 'inverse' else '-O'} ({s}) pass@1"] = p["pass_at_1"]
    f["pairs (n)"] = nx["all"]["n"]
    f["backend errors"] = nx["all"]["errors"]
    f["tokens seen (M)"] = info["tokens"] / 1e6
    f["CPU-hours"] = info["cpu_seconds"] / 3600
    f["eval seconds"] = res["gate_seconds"]
    return f


def decide(old_res, new_res, promoted_on, size, today):
    """The gate's reasons against promoting (none: promote)."""
    reasons = []
    old, new = old_res["next_state"], new_res["next_state"]
    gain = pct(new["all"]) - pct(old["all"])
    if gain < MIN_GAIN:
        reasons.append(f"next-state exact match rose {gain:+.1f} points (needs +{MIN_GAIN:.0f})")
    for a in sorted(set(old["by_action"]) | set(new["by_action"])):
        drop = pct(old["by_action"].get(a)) - pct(new["by_action"].get(a))
        if drop > MAX_DROP:
            reasons.append(f"{a} fell {drop:.1f} points (at most {MAX_DROP:.0f} allowed)")
    if promoted_on == today:
        reasons.append(f"already promoted today ({today})")
    if size > MAX_BYTES:
        reasons.append(f"the weights are {size:,} bytes (at most {MAX_BYTES:,})")
    return reasons


def shipped_info():
    sys.path.insert(0, HERE)
    import continuous as C
    _, info = C.shipped_history(DEFAULT)
    path = os.path.join(DEFAULT, "training.json")
    promoted = None
    if os.path.exists(path):
        with open(path) as f:
            promoted = json.load(f).get("promoted")
    return info, promoted


def plot_loss(csv_path, png):
    sys.path.insert(0, HERE)
    import train as T
    rows = []
    with open(csv_path) as f:
        next(f)
        for line in f:
            s, t, tr, ev = line.strip().split(",")
            rows.append((int(s), int(t), float(tr), float(ev) if ev else None))
    return T.plot_loss(rows, png)


def card(info, table, cfg, today):
    s = info["settings"]
    params = info["params"]
    lines = [
        "# ndbg default model", "",
        "A LLaMA-architecture decoder trained by `train/train.py` from scratch on DSL trajectories made by",
        "`ndbg data` from real CPython traces of generated programs (no CRUXEval program is trained on), then",
        "trained on continuously by `train/continuous.py` (`train/continue.sh`) and promoted by the gate",
        "`train/promote.sh` (train/README.md).", "",
        "| | |", "|---|---|",
        f"| parameters | {params:,} |",
        f"| layers / hidden / heads / kv heads / ffn | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / "
        f"{cfg['num_attention_heads']} / {cfg['num_key_value_heads']} / {cfg['intermediate_size']} |",
        f"| vocabulary | {cfg['vocab_size']} (byte-level BPE, tokenizer.json, unchanged since the first run) |",
        f"| context | {cfg['max_position_embeddings']} (trained at block {s['block']}; generated trajectories "
        "are mostly 100-900 tokens) |",
        f"| tokens seen (loss targets, cumulative) | {info['tokens']:,} |",
        f"| CPU-hours (cumulative, training and data) | {info['cpu_seconds'] / 3600:.2f} |",
        f"| steps | {info['step']:,} |",
        "| data | first `ndbg data --n 20000 --seed 1 --families dicts,exceptions,helpers,lists,numeric,recursion,strings`"
        f" (train/make_default.sh), then chunks of {s['programs']} programs with seeds 1000, 1001, ... (same families) |",
        f"| optimizer (continuous run) | AdamW lr {s['lr']} constant after {s['warmup']} warmup steps, wd "
        f"{s['weight_decay']}, clip {s['clip']}, about {s['batch_tokens']} tokens a step; exported: the "
        f"{'weight average (EMA ' + str(s['ema']) + ')' if info['weights'] == 'average' else 'last weights'} |",
        f"| held-out loss (seed 2) | {info['heldout_loss']:.4f} |" if info.get("heldout_loss") else
        "| held-out loss (seed 2) | n/a |",
        f"| promoted | {today} |", "",
        "![loss](loss.png)", "",
        "## Evaluation", "",
        f"The promotion gate's frozen set: `ndbg eval {' '.join(FROZEN)}` (generated programs of every family "
        "from seed 99, never trained on, and the CRUXEval dev split; greedy, constrained decoding). "
        "Exact match of the whole next state, in percent:", "",
        "| | previous model | this model | change |", "|---|---|---|---|",
    ]
    for name, (a, b) in table.items():
        lines.append(f"| {name.strip()} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
    lines += ["", "Targets (issue 12): next-state exact match ≥ 60% overall, step_return ≥ 45%; CRUXEval-O ≥ 20%, "
              "-I ≥ 15%. The long-run goal stays 90% on single steps.", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--check", action="store_true", help="compare and decide, never install")
    args = ap.parse_args()
    run = os.path.abspath(args.run_dir)
    if not os.path.exists(os.path.join(run, "ckpt.pt")):
        sys.exit(f"promote: {run} has no checkpoint (train/continue.sh start makes one within 10 minutes)")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    cont = os.path.join(HERE, "continue.sh")
    state = subprocess.run([cont, "status", run], capture_output=True, text=True).stdout
    paused = state.startswith("running")
    if paused:
        subprocess.run([cont, "pause", run], check=True, stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="ndbg-gate-")
    try:
        t0 = time.time()
        ndbg = os.path.join(work, "ndbg")
        # No VCS stamp: the cached figures' key changes with the source, not with every commit.
        subprocess.run(["go", "build", "-buildvcs=false", "-o", ndbg, "./cmd/ndbg"], cwd=ROOT, check=True)
        cand = os.path.join(work, "candidate")
        subprocess.run([sys.executable, os.path.join(HERE, "continuous.py"), "export", "--run-dir", run,
                        "--out", cand], check=True)
        with open(os.path.join(cand, "training.json")) as f:
            cinfo = json.load(f)
        sinfo, promoted_on = shipped_info()
        gate = os.path.join(run, "gate")
        os.makedirs(gate, exist_ok=True)
        key = digest([os.path.join(DEFAULT, f) for f in model_files(DEFAULT)] +
                     [os.path.join(DEFAULT, "config.json"), ndbg], FROZEN)
        cached = os.path.join(gate, f"shipped-{key}.json")
        if os.path.exists(cached):
            with open(cached) as f:
                old = json.load(f)
            print(f"shipped model: figures from {cached}", flush=True)
        else:
            print("evaluating the shipped model ...", flush=True)
            old = evaluate(ndbg, DEFAULT, os.path.join(work, "shipped.json"))
            with open(cached + ".tmp", "w") as f:
                json.dump(old, f)
            os.replace(cached + ".tmp", cached)
        print(f"evaluating the checkpoint (step {cinfo['step']}, {cinfo['weights']} weights) ...", flush=True)
        new = evaluate(ndbg, cand, os.path.join(gate, f"candidate-{cinfo['step']}.json"))
        fo, fn = figures(old, sinfo), figures(new, cinfo)
        print(f"\n{'':40} {'shipped':>9} {'candidate':>9} {'change':>8}")
        names = list(fo) + [n for n in fn if n not in fo]
        for name in names:
            a, b = fo.get(name, float("nan")), fn.get(name, float("nan"))
            print(f"{name:40} {a:9.1f} {b:9.1f} {b - a:+8.1f}")
        size = sum(os.path.getsize(os.path.join(cand, f)) for f in model_files(cand))
        reasons = decide(old, new, promoted_on, size, today)
        print(f"\ngate: {time.time() - t0:.0f} s")
        if reasons:
            print("decision: keep the shipped model: " + "; ".join(reasons))
            return 0
        if args.check:
            print("decision: the checkpoint passes the gate (--check: not installed)")
            return 0
        install(cand, cinfo, old, new, fo, fn, today, run, work)
        print(f"decision: promoted step {cinfo['step']} into weights/default; commit it "
              "(git add weights/default && git commit)")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if paused:
            subprocess.run([cont, "resume", run], stdout=subprocess.DEVNULL)


def install(cand, cinfo, old, new, fo, fn, today, run, work):
    """Replaces weights/default with the candidate; puts the old files back if the Go test fails."""
    backup = os.path.join(work, "backup")
    shutil.copytree(DEFAULT, backup)
    try:
        for f in model_files(DEFAULT):
            os.remove(os.path.join(DEFAULT, f))
        for f in model_files(cand) + ["config.json", "tokenizer.json", "loss.csv"]:
            shutil.copyfile(os.path.join(cand, f), os.path.join(DEFAULT, f))
        if not plot_loss(os.path.join(DEFAULT, "loss.csv"), os.path.join(DEFAULT, "loss.png")):
            raise RuntimeError("loss.png needs matplotlib (apt-get install python3-matplotlib)")
        with open(os.path.join(cand, "config.json")) as f:
            cfg = json.load(f)
        table = {k: (fo[k], fn[k]) for k in fo if k in fn and not k.startswith(("pairs", "backend", "eval", "tokens",
                                                                                  "CPU"))}
        with open(os.path.join(DEFAULT, "README.md"), "w") as f:
            f.write(card(cinfo, table, cfg, today))
        rec = {k: cinfo[k] for k in ("step", "tokens", "cpu_seconds", "weights", "heldout_loss")}
        rec.update({"promoted": today, "gate": {"args": FROZEN, "previous": fo, "this": fn}})
        with open(os.path.join(DEFAULT, "training.json"), "w") as f:
            json.dump(rec, f, indent=1)
        subprocess.run([sys.executable, os.path.join(HERE, "reference_logits.py"), DEFAULT,
                        os.path.join(run, "heldout", "tok")], check=True)
        subprocess.run(["go", "test", "-count=1", "-run", "DefaultModel", "."], cwd=ROOT, check=True)
    except BaseException:
        shutil.rmtree(DEFAULT)
        shutil.copytree(backup, DEFAULT)
        print("promote: installing failed; weights/default restored", file=sys.stderr)
        raise


if __name__ == "__main__":
    sys.exit(main())
