#!/usr/bin/env python3
"""The promotion gate: a candidate model against the shipped one
(weights/default), which is replaced only when the candidate is better on
programs nobody chose it on. Run through train/promote.sh:

  train/promote.sh [--check] [RUN_DIR]            # the continuous run's latest checkpoint
  train/promote.sh [--check] --model DIR [RUN_DIR] # an exported model (the GPU run's, train/gpu/RUN.md)

Three evaluations of each model (`ndbg eval`, the same binary and arguments
for both):
  - frozen (FROZEN): next-state exact match on generated programs of every
    default family (mixed included; long, drawn only by name, is not:
    progen pins these programs) from seed 99 (held out from training),
    pairs of every action kind along the training policy's trajectories;
  - fresh (FRESH_N programs, same families and pairs): a seed drawn anew for
    every gate, from a range no training data uses (FRESH_SEED_MIN and up),
    so a model cannot be chosen, gate after gate, for the frozen set's
    programs;
  - CRUXEval (CRUX): its development split, next-state pairs and
    CRUXEval-O/-I pass@1: REPORTED ONLY. It takes no part in the decision
    (it was, until this gate, through the frozen set's --items dev; the
    promoted model's 13% CRUXEval-O on these items then stood against 6.6%
    on the other 700).
The shipped model's frozen and CRUXEval figures are kept in RUN_DIR/gate,
keyed by a hash of its files, the binary and the arguments; its fresh
figures are made anew each time.

Promoted only when all hold (decide):
  - frozen set: next-state exact match (all pairs) rises by at least
    MIN_GAIN points, and no action kind falls by more than MAX_DROP;
  - fresh set: next-state exact match does not fall (MIN_FRESH_GAIN);
  - calibration: the candidate's expected calibration error over the frozen
    and fresh predictions together is at most MAX_ECE (0.05: the issue's
    target; the shipped 5M model measured 0.033);
  - the weights total at most MAX_BYTES (64 MiB: what comes back from a GPU
    run; every promoted version stays in every clone's history);
  - no promotion yet today (UTC; weights/default/training.json "promoted"),
    and none in the last LARGE_DAYS days when the weights are above
    LARGE_BYTES (a 60 MB model promoted daily would add 60 MB a day to a clone).
Then weights/default gets the candidate's files, loss.csv and loss.png, a
model card with the three evaluations, training.json, and reference logits
from train/reference_logits.py; `go test -count=1 -run DefaultModel .` must
pass, else the previous files are put back. A model promoted with --model
whose shape differs from the continuous run's becomes that run's new
starting point (train/continue.sh rebase), unless --no-rebase. With --check
it only compares. Commit weights/default afterwards (the gate does not).
"""
import argparse
import datetime
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT = os.path.join(ROOT, "weights", "default")
PAIRS = ["--pairs", "policy", "--traj", "4", "--max-pairs", "32", "--workers", "2", "--sample-seed", "1"]
FROZEN = ["--seed", "99", "--n", "240", "--tasks", "next", *PAIRS]
FRESH_N = 120
# Fresh seeds: far above every seed data is made with (1 and 1000+k by the
# CPU runs, 3,000,000+k by the GPU run; 2 and 99 are held out).
FRESH_SEED_MIN, FRESH_SEED_MAX = 10 ** 12, 2 ** 48
CRUX = ["--items", "dev", "--n", "0", "--max-steps", "60", *PAIRS]
MIN_GAIN, MAX_DROP = 1.0, 1.0  # points of exact match on the frozen set
MIN_FRESH_GAIN = 0.0  # points on the fresh set: a smaller set, so "not worse"
MAX_ECE = 0.05
MAX_BYTES = 64 << 20
LARGE_BYTES, LARGE_DAYS = 32_000_000, 7
MODEL_FILES = ("model", ".safetensors")


def fresh_args(seed):
    return ["--seed", str(seed), "--n", str(FRESH_N), "--tasks", "next", *PAIRS]


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


def evaluate(ndbg, model_dir, args, out):
    """Runs `ndbg eval` with args on model_dir; returns its JSON summary."""
    t0 = time.time()
    r = subprocess.run([ndbg, "eval", "--model", model_dir, *args, "--json", out], cwd=ROOT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ndbg eval --model {model_dir} {' '.join(args)} failed (exit {r.returncode}):\n"
                           f"{r.stdout[-2000:]}")
    with open(out) as f:
        res = json.load(f)
    res["gate_seconds"] = round(time.time() - t0, 1)
    return res


def merged_ece(*results):
    """The expected calibration error over the predictions of several
    evaluations together (their bins merged), or None when none carries a
    calibration."""
    bins = {}
    for res in results:
        cal = (res.get("next_state") or {}).get("calibration")
        for b in (cal or {}).get("bins", []):
            k = (b["lo"], b["hi"])
            n, conf, right = bins.get(k, (0, 0.0, 0))
            bins[k] = (n + b["n"], conf + b["confidence"] * b["n"], right + b["exact_match"])
    total = sum(n for n, _, _ in bins.values())
    if not total:
        return None
    return sum(abs(right / n - conf / n) * n / total for n, conf, right in bins.values() if n)


def figures(res):
    """One evaluation's table rows: name -> value (percent)."""
    out = {}
    nx = res.get("next_state")
    if nx:
        out.update({"next-state exact, all": pct(nx["all"]), "next-state exact, forward": pct(nx["forward"]),
                    "next-state exact, inverse": pct(nx["inverse"])})
        for a in sorted(nx["by_action"]):
            out[f"  {a} ({nx['by_action'][a]['n']} pairs)"] = pct(nx["by_action"][a])
        for part in ("event", "line"):
            out[f"  {part} right"] = 100.0 * nx["all"][part] / max(nx["all"]["n"], 1)
        out["  locals right"] = 100.0 * nx["all"]["locals"] / max(nx["all"]["locals_n"], 1)
        out["  value right"] = 100.0 * nx["all"]["value"] / max(nx["all"]["value_n"], 1)
        if nx.get("calibration"):
            out["  ECE (x100)"] = 100.0 * nx["calibration"]["ece"]
    for s, p in sorted((res.get("cruxeval") or {}).get("scores", {}).items()):
        out[f"CRUXEval {'-I' if s == 'inverse' else '-O'} ({s}) pass@1"] = p["pass_at_1"]
    return out


def generated_only(res, what):
    """res's next-state result, refusing one that holds CRUXEval items
    (family "items"): the decision is on generated programs only."""
    nx = res["next_state"]
    if "items" in (nx.get("by_family") or {}):
        raise ValueError(f"the {what} set holds CRUXEval items: they take no part in the decision")
    return nx


def decide(frozen_old, frozen_new, fresh_old, fresh_new, ece, promoted_on, size, today):
    """The gate's reasons against promoting (none: promote). The arguments
    are `ndbg eval` summaries of generated programs only (ValueError
    otherwise), the candidate's merged ECE (None: not measured), the date
    of the last promotion, the candidate's weights in bytes and today (UTC,
    ISO dates)."""
    reasons = []
    old, new = generated_only(frozen_old, "frozen"), generated_only(frozen_new, "frozen")
    gain = pct(new["all"]) - pct(old["all"])
    if gain < MIN_GAIN:
        reasons.append(f"frozen set: next-state exact match rose {gain:+.1f} points (needs +{MIN_GAIN:.0f})")
    for a in sorted(set(old["by_action"]) | set(new["by_action"])):
        drop = pct(old["by_action"].get(a)) - pct(new["by_action"].get(a))
        if drop > MAX_DROP:
            reasons.append(f"frozen set: {a} fell {drop:.1f} points (at most {MAX_DROP:.0f} allowed)")
    fo, fn = generated_only(fresh_old, "fresh"), generated_only(fresh_new, "fresh")
    fgain = pct(fn["all"]) - pct(fo["all"])
    if fgain < MIN_FRESH_GAIN:
        reasons.append(f"fresh set: next-state exact match fell {-fgain:.1f} points")
    if ece is None:
        reasons.append("no calibration measured (the candidate's predictions carry no confidence)")
    elif ece > MAX_ECE:
        reasons.append(f"calibration: ECE {ece:.3f} (at most {MAX_ECE})")
    if size > MAX_BYTES:
        reasons.append(f"the weights are {size:,} bytes (at most {MAX_BYTES:,})")
    if promoted_on == today:
        reasons.append(f"already promoted today ({today})")
    elif promoted_on and size > LARGE_BYTES:
        days = (datetime.date.fromisoformat(today) - datetime.date.fromisoformat(promoted_on)).days
        if days < LARGE_DAYS:
            reasons.append(f"weights above {LARGE_BYTES:,} bytes are promoted at most once in {LARGE_DAYS} days "
                           f"(last {promoted_on})")
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


def card(info, tables, cfg, today, fresh_seed, ece, size=0, nfiles=1):
    """The model card: what the model is, how it was trained (a GPU run or
    the continuous CPU run), and the gate's three evaluations."""
    s = info.get("settings") or {}
    gpu = info.get("gpu_seconds") is not None
    lines = ["# ndbg default model", ""]
    if gpu:
        d = info.get("data") or {}
        lines += [
            "A LLaMA-architecture decoder trained from scratch on a GPU by `train/gpu/run.sh` (one device call,",
            "train/gpu/RUN.md) on DSL trajectories made by `ndbg data` from real CPython "
            f"{d.get('python', '3.11')} traces of generated",
            "programs (no CRUXEval program is trained on), and promoted by the gate `train/promote.sh --model`",
            "(train/README.md). The CPU trainer (`train/continue.sh`) continues from it.", "",
            "| | |", "|---|---|",
            f"| parameters | {info['params']:,} |",
        ]
    else:
        lines += [
            "A LLaMA-architecture decoder trained by `train/train.py` from scratch on DSL trajectories made by",
            "`ndbg data` from real CPython traces of generated programs (no CRUXEval program is trained on), then",
            "trained on continuously by `train/continuous.py` (`train/continue.sh`) and promoted by the gate",
            "`train/promote.sh` (train/README.md).", "",
            "| | |", "|---|---|",
            f"| parameters | {info['params']:,} |",
        ]
    lines += [
        f"| layers / hidden / heads / kv heads / ffn | {cfg['num_hidden_layers']} / {cfg['hidden_size']} / "
        f"{cfg['num_attention_heads']} / {cfg['num_key_value_heads']} / {cfg['intermediate_size']} |",
        f"| vocabulary | {cfg['vocab_size']} (byte-level BPE, tokenizer.json, unchanged since the first run) |",
        f"| context | {cfg['max_position_embeddings']} (trained at block {s.get('block', '?')}; generated trajectories "
        "are mostly 100-2,000 tokens) |",
        f"| tokens seen (loss targets, cumulative) | {info['tokens']:,} |",
        f"| steps | {info['step']:,} |",
        f"| weights | {size / 1e6:.1f} MB of BF16 in {nfiles} file{'s' if nfiles > 1 else ''}, embedded in every "
        "binary (`-tags nodefaultmodel` leaves them out); each promoted version stays in the repository's "
        "history, about 80% of its size once compressed (train/README.md) |",
    ]
    if gpu:
        d = info.get("data") or {}
        lines += [
            f"| device | {info.get('gpu', info.get('device'))}, torch {info.get('torch')}, "
            f"{info['gpu_seconds']:.0f} s of training |",
            f"| throughput | {info.get('tokens_per_s', 0):,} tokens/s, {info.get('model_tflops_per_s')} TFLOP/s, MFU "
            f"{info.get('mfu_nominal')} of the nominal BF16 peak ({info.get('mfu_measured')} of the measured product) |",
            f"| attention / compile | {info.get('attention')} / {info.get('compile')} |",
            f"| data | chunks of 2000 programs (seeds 3,000,000 and up, the continuous run's mix): "
            f"{d.get('chunks_fresh')} fresh, {d.get('chunks_repeated')} taken again |",
            f"| optimizer | AdamW lr {s.get('lr')} (warmup {s.get('warmup')} steps, cosine over the run to "
            f"{s.get('min_lr_ratio')}x), wd {s.get('weight_decay')}, clip {s.get('clip')}, about "
            f"{s.get('batch_tokens')} tokens a step |",
        ]
        if info.get("cpu_seconds"):
            lines.append(f"| CPU-hours after the GPU run | {info['cpu_seconds'] / 3600:.2f} |")
    else:
        origin = s.get("from") or {}
        if origin.get("gpu_seconds"):
            lines.append(f"| started from | a GPU run's model ({origin.get('gpu')}, {origin['gpu_seconds']:.0f} s, "
                         f"step {origin.get('step')}), then trained on by the CPU trainer |")
        lines += [
            f"| CPU-hours (cumulative, training and data) | {info['cpu_seconds'] / 3600:.2f} |",
            ("| data | the GPU run's (seeds 3,000,000 and up)" if origin.get("gpu_seconds") else
             "| data | first `ndbg data --n 20000 --seed 1 --families dicts,exceptions,helpers,lists,numeric,recursion,"
             "strings` (train/make_default.sh)") +
            f", then chunks of {s.get('programs')} programs with seeds 1000, 1001, ... (train/README.md) |",
            f"| optimizer (continuous run) | AdamW lr {s.get('lr')} constant after {s.get('warmup')} warmup steps, wd "
            f"{s.get('weight_decay')}, clip {s.get('clip')}, about {s.get('batch_tokens')} tokens a step; exported: the "
            f"{'weight average (EMA ' + str(s.get('ema')) + ')' if info.get('weights') == 'average' else 'last weights'} |",
        ]
    lines += [
        f"| held-out loss (seed 2) | {info['heldout_loss']:.4f} |" if info.get("heldout_loss") else
        "| held-out loss (seed 2) | n/a |",
        f"| promoted | {today} |", "",
        "![loss](loss.png)", "",
        "## Evaluation", "",
        "The promotion gate (`train/promote.sh`; greedy, constrained decoding). It decides on generated programs "
        "only: the frozen set "
        f"`ndbg eval {' '.join(FROZEN)}` (every default family, seed 99, never trained on) and a fresh set drawn for "
        f"this gate (`--seed {fresh_seed} --n {FRESH_N}`). CRUXEval's development split (`{' '.join(CRUX)}`) is "
        "reported and takes no part in the decision. Exact match of the whole next state, in percent; calibration "
        f"(ECE over the frozen and fresh predictions) {'n/a' if ece is None else f'{ece:.3f}'} "
        f"(at most {MAX_ECE} to ship).", "",
    ]
    for title, table in tables:
        lines += [f"### {title}", "", "| | previous model | this model | change |", "|---|---|---|---|"]
        for name, (a, b) in table.items():
            lines.append(f"| {name.strip()} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        lines.append("")
    lines += ["Targets (issue 30): next-state exact match on generated held-out programs ≥ 60% (step_return ≥ 45%), "
              "CRUXEval-O ≥ 20% and CRUXEval-I ≥ 20% on the development split, ECE ≤ 0.05. The long-run goal stays "
              "90% on single steps.", ""]
    return "\n".join(lines)


def heldout_tokens(run, ndbg, work):
    """A tokenized held-out split for the reference logits: the continuous
    run's (seed 2), or one made now."""
    tok = os.path.join(run, "heldout", "tok")
    if os.path.exists(os.path.join(tok, "val.tokens")):
        return tok
    raw, tok = os.path.join(work, "heldout-raw"), os.path.join(work, "heldout-tok")
    subprocess.run([ndbg, "data", "--n", "40", "--seed", "2", "--out", raw,
                    "--families", "dicts,exceptions,helpers,lists,numeric,recursion,strings"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([ndbg, "tokenize", "--tokenizer", os.path.join(DEFAULT, "tokenizer.json"), "--train", raw,
                    "--val", raw, "--out", tok], check=True, stdout=subprocess.DEVNULL)
    return tok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir")
    ap.add_argument("--check", action="store_true", help="compare and decide, never install")
    ap.add_argument("--model", default="", help="gate this exported model folder instead of the run's checkpoint")
    ap.add_argument("--fresh-seed", type=int, default=0, help="the fresh set's seed (default: drawn now)")
    ap.add_argument("--no-rebase", action="store_true",
                    help="with --model: leave the continuous run on its own model after a promotion")
    args = ap.parse_args()
    run = os.path.abspath(args.run_dir)
    cand_dir = os.path.abspath(args.model) if args.model else ""
    if cand_dir and not os.path.exists(os.path.join(cand_dir, "config.json")):
        sys.exit(f"promote: {cand_dir} has no config.json: not an exported model (train/gpu/reassemble.py makes one)")
    if not cand_dir and not os.path.exists(os.path.join(run, "ckpt.pt")):
        sys.exit(f"promote: {run} has no checkpoint (train/continue.sh start makes one within 10 minutes)")
    fresh_seed = args.fresh_seed or random.SystemRandom().randrange(FRESH_SEED_MIN, FRESH_SEED_MAX)
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    cont = os.path.join(HERE, "continue.sh")
    paused = False
    if os.path.isdir(run):
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
        if cand_dir:
            cand = cand_dir
            cinfo = {}
            if os.path.exists(os.path.join(cand, "training.json")):
                with open(os.path.join(cand, "training.json")) as f:
                    cinfo = json.load(f)
            cinfo.setdefault("step", 0)
            cinfo.setdefault("tokens", 0)
            cinfo.setdefault("cpu_seconds", 0.0)
            label = f"{cand} (step {cinfo['step']})"
        else:
            cand = os.path.join(work, "candidate")
            subprocess.run([sys.executable, os.path.join(HERE, "continuous.py"), "export", "--run-dir", run,
                            "--out", cand], check=True)
            with open(os.path.join(cand, "training.json")) as f:
                cinfo = json.load(f)
            label = f"the checkpoint (step {cinfo['step']}, {cinfo['weights']} weights)"
        sinfo, promoted_on = shipped_info()
        gate = os.path.join(run if os.path.isdir(run) else work, "gate")
        os.makedirs(gate, exist_ok=True)
        shipped_key = [os.path.join(DEFAULT, f) for f in model_files(DEFAULT)] + [os.path.join(DEFAULT, "config.json"),
                                                                                   ndbg]

        def shipped(what, eval_args):
            cached = os.path.join(gate, f"shipped-{what}-{digest(shipped_key, eval_args)}.json")
            if os.path.exists(cached):
                with open(cached) as f:
                    print(f"shipped model, {what}: figures from {cached}", flush=True)
                    return json.load(f)
            print(f"evaluating the shipped model: {what} ...", flush=True)
            res = evaluate(ndbg, DEFAULT, eval_args, os.path.join(work, f"shipped-{what}.json"))
            with open(cached + ".tmp", "w") as f:
                json.dump(res, f)
            os.replace(cached + ".tmp", cached)
            return res

        print(f"fresh set: seed {fresh_seed}, {FRESH_N} programs", flush=True)
        old = {"frozen": shipped("frozen", FROZEN), "crux": shipped("cruxeval", CRUX)}
        print("evaluating the shipped model: fresh ...", flush=True)
        old["fresh"] = evaluate(ndbg, DEFAULT, fresh_args(fresh_seed), os.path.join(work, "shipped-fresh.json"))
        new = {}
        for what, eval_args in (("frozen", FROZEN), ("fresh", fresh_args(fresh_seed)), ("crux", CRUX)):
            print(f"evaluating {label}: {what} ...", flush=True)
            new[what] = evaluate(ndbg, cand, eval_args, os.path.join(gate, f"candidate-{cinfo['step']}-{what}.json"))
        ece = merged_ece(new["frozen"], new["fresh"])
        tables = []
        for what, title in (("frozen", "Frozen set (seed 99): decides"),
                            ("fresh", f"Fresh set (seed {fresh_seed}): decides"),
                            ("crux", "CRUXEval development split: reported only")):
            fo, fn = figures(old[what]), figures(new[what])
            print(f"\n{title}\n{'':40} {'shipped':>9} {'candidate':>9} {'change':>8}")
            for name in list(fo) + [n for n in fn if n not in fo]:
                a, b = fo.get(name, float("nan")), fn.get(name, float("nan"))
                print(f"{name:40} {a:9.1f} {b:9.1f} {b - a:+8.1f}")
            tables.append((title, {k: (fo[k], fn[k]) for k in fo if k in fn}))
        print(f"\ncandidate ECE (frozen and fresh): {ece if ece is None else round(ece, 4)}; "
              f"shipped: {merged_ece(old['frozen'], old['fresh'])}")
        size = sum(os.path.getsize(os.path.join(cand, f)) for f in model_files(cand) if f.endswith(".safetensors"))
        reasons = decide(old["frozen"], new["frozen"], old["fresh"], new["fresh"], ece, promoted_on, size, today)
        print(f"\ngate: {time.time() - t0:.0f} s")
        if reasons:
            print("decision: keep the shipped model: " + "; ".join(reasons))
            return 0
        if args.check:
            print("decision: the candidate passes the gate (--check: not installed)")
            return 0
        install(cand, cinfo, tables, today, run, work, ndbg, fresh_seed, ece)
        print(f"decision: promoted {label} into weights/default; commit it (git add -A weights/default && git commit)")
        if cand_dir and not args.no_rebase and os.path.isdir(run):
            print("the continuous run starts again from the promoted model (train/continue.sh rebase) ...", flush=True)
            r = subprocess.run([cont, "rebase", DEFAULT, run])
            paused = paused and r.returncode != 0  # a rebased run is running anew
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if paused:
            subprocess.run([cont, "resume", run], stdout=subprocess.DEVNULL)


def install(cand, cinfo, tables, today, run, work, ndbg, fresh_seed, ece):
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
        cinfo = dict(cinfo)
        if "params" not in cinfo:
            sys.path.insert(0, HERE)
            import train as T
            _, sd = T.load_export(cand)
            cinfo["params"] = sum(v.numel() for k, v in sd.items() if not (cfg["tie_word_embeddings"] and k ==
                                                                           "lm_head.weight"))
        weights = [f for f in model_files(cand) if f.endswith(".safetensors")]
        with open(os.path.join(DEFAULT, "README.md"), "w") as f:
            f.write(card(cinfo, tables, cfg, today, fresh_seed, ece,
                         sum(os.path.getsize(os.path.join(cand, w)) for w in weights), len(weights)))
        keep = ("step", "tokens", "cpu_seconds", "gpu_seconds", "weights", "heldout_loss", "params", "device", "gpu",
                "torch", "tokens_per_s", "mfu_nominal", "mfu_measured", "data", "settings", "attention", "compile")
        rec = {k: cinfo[k] for k in keep if k in cinfo}
        rec.update({"promoted": today, "gate": {"frozen": FROZEN, "fresh": fresh_args(fresh_seed), "cruxeval": CRUX,
                                                "ece": ece, "tables": {t: v for t, v in tables}}})
        with open(os.path.join(DEFAULT, "training.json"), "w") as f:
            json.dump(rec, f, indent=1)
        subprocess.run([sys.executable, os.path.join(HERE, "reference_logits.py"), DEFAULT,
                        heldout_tokens(run, ndbg, work)], check=True)
        subprocess.run(["go", "test", "-count=1", "-run", "DefaultModel", "."], cwd=ROOT, check=True)
    except BaseException:
        shutil.rmtree(DEFAULT)
        shutil.copytree(backup, DEFAULT)
        print("promote: installing failed; weights/default restored", file=sys.stderr)
        raise


if __name__ == "__main__":
    sys.exit(main())
