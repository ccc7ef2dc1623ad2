"""Tests of train/continuous.py and the safetensors reader in train.py.

  /usr/bin/python3 -m unittest discover -s train -v

Skipped (with the reason) where torch or numpy cannot be imported.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    np = torch = None
    MISSING = f"needs torch and numpy ({e}); on Debian: apt-get install python3-torch python3-numpy"
else:
    MISSING = None
if MISSING and os.environ.get("NDBG_REQUIRE_ORACLES"):
    # CI installs every oracle: a missing one is a failure there, not a skip.
    raise ImportError("NDBG_REQUIRE_ORACLES is set: " + MISSING)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "weights", "default")
if MISSING is None:
    sys.path.insert(0, HERE)
    import train as T  # noqa: E402


def write_split(directory, name, docs, prompt=4):
    """Writes docs (lists of token ids) in `ndbg tokenize`'s format."""
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, name)
    np.concatenate(docs).astype("<u4").tofile(base + ".tokens")
    np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype("<u8").tofile(base + ".offsets")
    np.full(len(docs), prompt, dtype="<u4").tofile(base + ".prompt")
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump({"vocab_size": 4096, "bos_id": 0, "eos_id": 1, "pad_id": 1}, f)


@unittest.skipIf(MISSING, MISSING)
class SafetensorsTest(unittest.TestCase):
    def test_shipped_model_round_trips(self):
        """weights/default read into train.py's model and exported again is the
        same file, byte for byte, and gives the Go engine's reference logits."""
        cfg, sd = T.load_export(DEFAULT)
        model = T.Llama(cfg)
        model.load_state_dict(sd)
        with tempfile.TemporaryDirectory() as out:
            T.export(model, cfg, 15, os.path.join(DEFAULT, "tokenizer.json"), out, torch.bfloat16)
            for name in ("model.safetensors", "config.json"):
                with open(os.path.join(DEFAULT, name), "rb") as a, open(os.path.join(out, name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)
        with open(os.path.join(DEFAULT, "reference_logits.json")) as f:
            ref = json.load(f)
        model.eval()
        with torch.no_grad():
            out = model(torch.tensor([ref["sequences"][0]]))[0]
        want = torch.tensor(ref["logits"][0])
        got = out[ref["positions"][0]]
        self.assertLess(float((got - want).abs().max()), 1e-3)


@unittest.skipIf(MISSING, MISSING)
class ModelTest(unittest.TestCase):
    def test_blocked_equals_plain(self):
        """train.causal_attention (blocks of query rows against the keys up to
        each block's end) gives the plain formula's values and gradients, for
        lengths below, at and across the block size."""
        mask = torch.ones(4, 4, dtype=torch.bool).tril()  # the plain formula is the masked softmax
        q, k, v = (torch.randn(1, 1, 4, 8) for _ in range(3))
        att = (q @ k.transpose(-1, -2) / 8 ** 0.5).masked_fill(~mask, float("-inf"))
        self.assertTrue(torch.allclose(T.plain_causal_attention(q, k, v, torch.full((4, 4), float("-inf")).triu(1)),
                                       torch.softmax(att, dim=-1) @ v, atol=1e-6))
        torch.manual_seed(5)
        for t in (1, 7, T.ATTENTION_BLOCK, T.ATTENTION_BLOCK + 45, 3 * T.ATTENTION_BLOCK - 1):
            q, k, v = (torch.randn(2, 3, t, 8, requires_grad=True) for _ in range(3))
            bias = torch.full((t, t), float("-inf")).triu(1)
            got = T.causal_attention(q, k, v, bias)
            want = T.plain_causal_attention(q, k, v, bias)
            self.assertTrue(torch.allclose(got, want, atol=1e-5), t)
            g = torch.randn_like(want)
            ga = torch.autograd.grad(got, (q, k, v), g)
            gb = torch.autograd.grad(want, (q, k, v), g)
            for x, y in zip(ga, gb):
                self.assertTrue(torch.allclose(x, y, atol=1e-4), t)

    @unittest.skipIf(MISSING is None and not hasattr(torch.nn.functional, "scaled_dot_product_attention"),
                     "this torch has no scaled_dot_product_attention (PyTorch 2.0+; train/gpu/run.sh runs this "
                     "test on the GPU machine, and gpu_train.py checks the kernel on the device)")
    def test_fused_equals_blocked(self):
        """train.fused_causal_attention (torch's fused kernel, what a GPU run
        uses) gives causal_attention's values and gradients, and the whole
        model gives the same logits either way."""
        torch.manual_seed(8)
        for t in (1, 7, T.ATTENTION_BLOCK + 45, 2 * T.ATTENTION_BLOCK + 3):
            q, k, v = (torch.randn(2, 3, t, 16, requires_grad=True) for _ in range(3))
            bias = torch.full((t, t), float("-inf")).triu(1)
            want = T.causal_attention(q, k, v, bias)
            got = T.fused_causal_attention(q, k, v)
            self.assertTrue(torch.allclose(got, want, atol=1e-5), t)
            g = torch.randn_like(want)
            for x, y in zip(torch.autograd.grad(got, (q, k, v), g), torch.autograd.grad(want, (q, k, v), g)):
                self.assertTrue(torch.allclose(x, y, atol=1e-4), t)
        cfg, sd = T.load_export(DEFAULT)
        model = T.Llama(cfg)
        model.load_state_dict(sd)
        x = torch.randint(2, 4096, (2, 300))
        saved = T.USE_FUSED_ATTENTION
        try:
            T.USE_FUSED_ATTENTION = True
            fused = model(x)
            T.USE_FUSED_ATTENTION = False
            blocked = model(x)
        finally:
            T.USE_FUSED_ATTENTION = saved
        self.assertLess(float((fused - blocked).abs().max()), 1e-3)

    def test_loss_on_kept_positions(self):
        """masked_loss computes logits at the masked positions only; its value
        and gradients are those of the loss over every position's logits,
        weighted by the mask; no position kept gives 0."""
        torch.manual_seed(6)
        cfg, sd = T.load_export(DEFAULT)
        model = T.Llama(cfg)
        model.load_state_dict(sd)
        x = torch.randint(2, 4096, (3, 40))
        y = torch.randint(2, 4096, (3, 40))
        m = (torch.rand(3, 40) < 0.4).float()
        got = T.masked_loss(model, x, y, m)
        ga = torch.autograd.grad(got, list(model.parameters()))
        want = T.masked_loss(model, x, y, m, all_logits=True)
        logits = model(x)
        full = torch.nn.functional.cross_entropy(logits.reshape(-1, 4096), y.reshape(-1), reduction="none")
        self.assertAlmostEqual(want.item(), ((full * m.reshape(-1)).sum() / m.sum()).item(), places=5)
        gb = torch.autograd.grad(want, list(model.parameters()))
        self.assertAlmostEqual(got.item(), want.item(), places=5)
        for a, b in zip(ga, gb):
            self.assertTrue(torch.allclose(a, b, atol=1e-6))
        self.assertEqual(T.masked_loss(model, x, y, torch.zeros(3, 40)).item(), 0.0)


class RunFixture(unittest.TestCase):
    """A tiny exported model to start runs from, and runs with their chunks
    and held-out split already made (no ndbg needed)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ndbg-continuous-")
        rng = np.random.default_rng(7)
        # A tiny model exported as a run's starting point.
        cfg = {"vocab_size": 4096, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
               "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 64,
               "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "bos_token_id": 0,
               "eos_token_id": 1}
        self.source = os.path.join(self.tmp, "source")
        os.makedirs(self.source)
        torch.manual_seed(3)
        T.export(T.Llama(cfg), cfg, 15, os.path.join(DEFAULT, "tokenizer.json"), self.source, torch.float32)
        with open(os.path.join(self.source, "loss.csv"), "w") as f:
            f.write("step,tokens,train_loss,heldout_loss\n5,100,8.0,8.1\n")
        self.chunks = [[rng.integers(2, 4096, size=rng.integers(8, 40)) for _ in range(12)] for _ in range(30)]
        self.heldout = [rng.integers(2, 4096, size=30) for _ in range(20)]

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def new_run(self, name):
        run = os.path.join(self.tmp, name)
        write_split(os.path.join(run, "heldout", "tok"), "val", self.heldout)
        for k, docs in enumerate(self.chunks):
            write_split(os.path.join(run, "chunks", f"chunk-{k:06d}"), "train", docs)
        return run

    def command(self, run, *extra):
        return [sys.executable, os.path.join(HERE, "continuous.py"), "run", "--run-dir", run, "--from", self.source,
                "--ahead", "0", "--block", "32", "--batch-tokens", "128", "--warmup", "3", "--eval-every", "4",
                "--log-every", "1", *extra]

    def state(self, run):
        return torch.load(os.path.join(run, "ckpt.pt"))


@unittest.skipIf(MISSING, MISSING)
class ResumeTest(RunFixture):
    """A run stopped by SIGTERM and resumed ends in exactly the state of a run
    that never stopped: weights, average, optimizer, data position, loss rows."""

    def test_sigterm_then_resume_equals_one_run(self):
        stopped = self.new_run("stopped")
        p = subprocess.Popen(self.command(stopped), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while not os.path.exists(os.path.join(stopped, "progress.json")) and time.time() < deadline:
            time.sleep(0.05)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("stopped (signal 15)", out)
        self.assertFalse(os.path.exists(os.path.join(stopped, "pid")), "pid file left behind")
        at = self.state(stopped)["step"]
        end = at + 6
        self.assertLessEqual(end, 5 + 30 * 2, "SIGTERM came too late for the corpus")
        r = subprocess.run(self.command(stopped, "--max-steps", str(end)), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"resumed at step {at}", r.stdout)
        whole = self.new_run("whole")
        r = subprocess.run(self.command(whole, "--max-steps", str(end)), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        a, b = self.state(stopped), self.state(whole)
        for key in ("step", "tokens", "chunk", "batch", "rows", "ema_evals", "settings", "cfg"):
            self.assertEqual(a[key], b[key], key)
        for key in ("model", "ema"):
            for name in a[key]:
                self.assertTrue(torch.equal(a[key][name], b[key][name]), f"{key} {name}")
        sa, sb = a["opt"]["state"], b["opt"]["state"]
        self.assertEqual(sorted(sa), sorted(sb))
        for i in sa:
            for k in sa[i]:
                self.assertTrue(torch.equal(torch.as_tensor(sa[i][k]), torch.as_tensor(sb[i][k])), f"opt {i} {k}")
        # Trained chunks are deleted; the current one stays.
        left = sorted(os.listdir(os.path.join(whole, "chunks")))
        self.assertEqual(left[0], f"chunk-{b['chunk']:06d}")

    def test_export_loads_in_the_model(self):
        run = self.new_run("run")
        r = subprocess.run(self.command(run, "--max-steps", "9"), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = os.path.join(self.tmp, "export")
        r = subprocess.run([sys.executable, os.path.join(HERE, "continuous.py"), "export", "--run-dir", run,
                            "--out", out], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        cfg, sd = T.load_export(out)
        self.assertEqual(cfg["max_position_embeddings"], 32)
        T.Llama(cfg).load_state_dict(sd)
        with open(os.path.join(out, "training.json")) as f:
            info = json.load(f)
        self.assertEqual(info["step"], 9)
        with open(os.path.join(out, "loss.csv")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[1], "5,100,8.00000,8.10000")  # the history it started from
        self.assertEqual(len(lines), 1 + 1 + 4)

    def test_cooldown_ends_the_run_at_a_falling_rate(self):
        run = self.new_run("cool")
        r = subprocess.run(self.command(run, "--max-steps", "8"), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run(self.command(run, "--cooldown", "4"), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("cooldown: the learning rate falls linearly over steps 9-12", r.stdout)
        st = self.state(run)
        self.assertEqual(st["step"], 12)
        self.assertEqual(st["settings"]["cooldowns"], [[8, 4]])
        for g in st["opt"]["param_groups"]:  # the last step's: a quarter of the rate (1e-3)
            self.assertAlmostEqual(g["lr"], 1e-3 / 4)
        # The held-out loss measured after the last step, though it is no
        # --eval-every step (the run started at 5: 7 steps since), so that
        # export chooses between the weights and their average by it.
        self.assertEqual(st["rows"][-1][0], 12)
        self.assertIsNotNone(st["rows"][-1][3])
        self.assertEqual(st["ema_evals"][-1][0], 12)
        r = subprocess.run(self.command(run, "--cooldown", "2", "--max-steps", "20"), capture_output=True,
                           text=True, timeout=120)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("give one", r.stderr)
        self.assertEqual(self.state(run)["step"], 12, "a refused command trained")

    def test_lr_at(self):
        import continuous as C
        s = {"lr": 1e-3, "warmup": 4}
        self.assertAlmostEqual(C.lr_at(0, s), 2.5e-4)
        self.assertAlmostEqual(C.lr_at(9, s), 1e-3)
        self.assertEqual([round(C.lr_at(20, s, left, 4) / 1e-3, 4) for left in (4, 3, 2, 1)], [1, 0.75, 0.5, 0.25])


@unittest.skipIf(MISSING, MISSING)
class MixTest(unittest.TestCase):
    """The data mix per chunk: a run records when each mix starts, so a chunk
    is made again with the families it was trained on."""

    def setUp(self):
        import continuous as C
        self.C = C

    def test_mix_at(self):
        mixes = [[0, "a"], [5, "a,b"], [9, "c"]]
        self.assertEqual([self.C.mix_at(mixes, k) for k in (0, 4, 5, 8, 9, 100)], ["a", "a", "a,b", "a,b", "c", "c"])

    def test_resumed_run_follows_the_new_mix_from_its_first_unmade_chunk(self):
        C = self.C
        with tempfile.TemporaryDirectory() as tmp:
            run = C.Run.__new__(C.Run)
            run.s = {"block": 2048}  # settings of a run from before mixes were recorded
            run.chunk = 3
            for k in (3, 4):  # the current chunk and one made ahead, both with the old mix
                os.makedirs(os.path.join(tmp, f"chunk-{k:06d}"))
            self.assertEqual(run.follow_mix(tmp), 5)
            self.assertEqual(run.s["mixes"], [[0, C.SHORT_FAMILIES], [5, C.FAMILIES]])
            self.assertEqual(C.mix_at(run.s["mixes"], 4), C.SHORT_FAMILIES)
            self.assertEqual(C.mix_at(run.s["mixes"], 5), C.FAMILIES)
            self.assertIsNone(run.follow_mix(tmp), "a run already on the mix keeps its record")
            self.assertEqual(len(run.s["mixes"]), 2)

    def test_mix_has_long_programs_and_the_held_out_families(self):
        fams = self.C.FAMILIES.split(",")
        self.assertGreater(fams.count("long"), 0, "long programs train the context's far positions")
        short = self.C.SHORT_FAMILIES.split(",")
        self.assertEqual({fams.count(f) for f in short}, {fams.count(short[0])}, "the short families drawn equally")
        self.assertNotIn("mixed", fams)
        self.assertEqual(set(fams) - {"long"}, set(self.C.SHORT_FAMILIES.split(",")))


class GateTest(unittest.TestCase):
    """promote.decide: the gate's rule, on made-up `ndbg eval` summaries."""

    @staticmethod
    def result(all_state, by_action, families=("lists",)):
        def tally(k):
            return {"n": 100, "state": k, "event": 95, "line": 80, "locals": 40, "locals_n": 100, "value": 30,
                    "value_n": 100}
        return {"next_state": {"all": tally(all_state), "forward": tally(all_state), "inverse": tally(all_state),
                               "by_action": {a: tally(k) for a, k in by_action.items()},
                               "by_family": {f: tally(all_state) for f in families}}}

    def test_decision_sets_are_generated_programs_only(self):
        """The frozen set names no families (progen's default mix, which
        leaves out long and whose seed-99 programs progen's
        TestExistingFamiliesPinned pins); neither it nor the fresh set holds
        CRUXEval items; the fresh seed is drawn above every training seed;
        CRUXEval's development split is a separate, reported evaluation."""
        sys.path.insert(0, HERE)
        import promote as P
        self.assertNotIn("--families", P.FROZEN)
        self.assertEqual(P.FROZEN[:4], ["--seed", "99", "--n", "240"])
        for args in (P.FROZEN, P.fresh_args(P.FRESH_SEED_MIN)):
            self.assertNotIn("--items", args)
            self.assertEqual(args[args.index("--tasks") + 1], "next")
        self.assertIn("--items", P.CRUX)
        self.assertEqual(P.CRUX[P.CRUX.index("--n") + 1], "0")
        self.assertGreater(P.FRESH_SEED_MIN, 3_100_000 + 10 ** 9)

    def test_decide(self):
        sys.path.insert(0, HERE)
        import promote as P
        old = self.result(30, {"step_into": 40, "inv_continue": 5})
        fresh_old = self.result(32, {"step_into": 40})
        good_fresh = self.result(32, {"step_into": 41})
        ok = 0.03
        cases = [
            # +1 point, a fall of 1 on one kind, fresh not worse: promote
            (self.result(31, {"step_into": 41, "inv_continue": 4}), good_fresh, ok, None, 0, []),
            (self.result(30.5, {"step_into": 41, "inv_continue": 5}), good_fresh, ok, None, 0, ["rose +0.5 points"]),
            (self.result(35, {"step_into": 45, "inv_continue": 3.5}), good_fresh, ok, None, 0, ["inv_continue fell 1.5"]),
            (self.result(35, {"step_into": 45}), good_fresh, ok, None, 0, ["inv_continue fell 5.0"]),  # a kind that vanished
            (self.result(35, {"step_into": 45, "inv_continue": 5}), self.result(31, {}), ok, None, 0,
             ["fresh set: next-state exact match fell 1.0"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, 0.08, None, 0, ["ECE 0.080"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, None, None, 0, ["no calibration"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, ok, "2026-01-02", 0,
             ["already promoted today"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, ok, "2026-01-01", 70_000_000,
             ["at most 67,108,864", "once in 7 days"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, ok, "2025-12-20", 60_000_000, []),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, ok, "2025-12-30", 60_000_000,
             ["once in 7 days"]),
            (self.result(35, {"step_into": 45, "inv_continue": 5}), good_fresh, ok, "2026-01-01", 20_000_000, []),
        ]
        for new, fresh_new, ece, promoted, size, want in cases:
            got = P.decide(old, new, fresh_old, fresh_new, ece, promoted, size, "2026-01-02")
            self.assertEqual(len(got), len(want), got)
            for w, g in zip(want, got):
                self.assertIn(w, g)
        crux = self.result(35, {"step_into": 45, "inv_continue": 5}, families=("lists", "items"))
        with self.assertRaisesRegex(ValueError, "CRUXEval"):
            P.decide(old, crux, fresh_old, good_fresh, ok, None, 0, "2026-01-02")
        with self.assertRaisesRegex(ValueError, "CRUXEval"):
            P.decide(old, self.result(35, {}), fresh_old, crux, ok, None, 0, "2026-01-02")

    @unittest.skipIf(MISSING or not shutil.which("go"), "needs torch and Go")
    def test_main_check_on_an_exported_model(self):
        """promote.py --check --model DIR (the GPU run's way): the three
        evaluations of both models (ndbg eval replaced here by canned
        summaries), the shipped model's frozen and CRUXEval figures cached
        but never its fresh ones, the decision printed; CRUXEval's figures,
        however bad, change nothing; nothing installed."""
        sys.path.insert(0, HERE)
        import contextlib
        import io
        import promote as P
        tmp = tempfile.mkdtemp(prefix="ndbg-gate-test-")
        self.addCleanup(shutil.rmtree, tmp)
        model = os.path.join(tmp, "gpu-model")
        os.makedirs(model)
        cfg, sd = T.load_export(DEFAULT)
        m = T.Llama(cfg)
        m.load_state_dict(sd)
        T.export(m, cfg, 4, os.path.join(DEFAULT, "tokenizer.json"), model, torch.bfloat16)
        with open(os.path.join(model, "training.json"), "w") as f:
            json.dump({"step": 900, "tokens": 5, "cpu_seconds": 0.0, "gpu_seconds": 300.0}, f)
        run = os.path.join(tmp, "run")
        os.makedirs(run)
        calls = []

        def cal(ece):
            return {"n": 100, "ece": ece, "bins": [{"lo": 0.9, "hi": 1.0, "n": 100, "confidence": 0.9,
                                                    "exact_match": round(100 * (0.9 - ece))}]}

        def fake(candidate_frozen, candidate_fresh, crux_new):
            def evaluate(ndbg, model_dir, args, out):
                calls.append((model_dir, args[:2]))
                new = model_dir != P.DEFAULT
                if "--items" in args:
                    r = self.result(crux_new if new else 30, {"step_into": 30}, families=("items",))
                    r["cruxeval"] = {"scores": {"step_return": {"pass_at_1": crux_new if new else 13.0}}}
                    return r
                a = candidate_frozen if args[1] == "99" else candidate_fresh
                r = self.result(a if new else 30, {"step_into": a if new else 30})
                r["next_state"]["calibration"] = cal(0.02)
                return r
            return evaluate

        def gate(*extra, frozen=32, fresh=31, crux=0):
            P.evaluate = fake(frozen, fresh, crux)
            sys.argv = ["promote.py", run, "--check", "--model", model, "--fresh-seed", "1000000000007", *extra]
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(P.main(), 0)
            return out.getvalue()

        saved = P.evaluate
        before = self.snapshot()
        try:
            text = gate(crux=0)  # CRUXEval at 0%: reported, not deciding
            self.assertIn("decision: the candidate passes the gate (--check: not installed)", text)
            self.assertIn("CRUXEval development split: reported only", text)
            self.assertIn("fresh set: seed 1000000000007", text)
            cached = sorted(os.listdir(os.path.join(run, "gate")))
            self.assertEqual([c.split("-")[1] for c in cached if c.startswith("shipped-")], ["cruxeval", "frozen"])
            n = len(calls)
            text = gate(frozen=32, fresh=29)
            self.assertIn("keep the shipped model: fresh set: next-state exact match fell 1.0 points", text)
            self.assertEqual([c[1] for c in calls[n:] if c[0] == P.DEFAULT], [["--seed", "1000000000007"]],
                             "the shipped model's frozen and CRUXEval figures come from the cache")
        finally:
            P.evaluate = saved
        self.assertEqual(before, self.snapshot(), "--check installs nothing")

    @staticmethod
    def snapshot():
        out = {}
        for n in sorted(os.listdir(DEFAULT)):
            with open(os.path.join(DEFAULT, n), "rb") as f:
                out[n] = hash(f.read())
        return out

    def test_merged_ece(self):
        """The ECE over two evaluations is that of their predictions pooled
        (bins merged), not a mean of the two ECEs."""
        sys.path.insert(0, HERE)
        import promote as P

        def res(bins):
            return {"next_state": {"calibration": {"bins": [
                {"lo": lo, "hi": lo + 0.1, "n": n, "confidence": c, "exact_match": k} for lo, n, c, k in bins]}}}
        a = res([(0.9, 10, 0.95, 9)])   # 90% right at 0.95: |0.9 - 0.95| = 0.05
        b = res([(0.9, 30, 0.95, 30), (0.0, 10, 0.05, 0)])  # 100% at 0.95, 0% at 0.05
        # pooled: bin 0.9: 40 at 0.95, 39 right -> |0.975 - 0.95| = 0.025 (weight 40/50); bin 0.0: 0.05 (10/50)
        self.assertAlmostEqual(P.merged_ece(a, b), 0.8 * 0.025 + 0.2 * 0.05)
        self.assertIsNone(P.merged_ece({"next_state": {}}))


@unittest.skipIf(MISSING, MISSING)
class RebaseTest(RunFixture):
    """A model trained elsewhere (the GPU run's) becomes the continuous run's
    new starting point: rebase moves the old run aside, and the next run
    starts from the new model, with its shape, step and history."""

    def test_rebase_starts_from_the_new_model(self):
        run = self.new_run("run")
        r = subprocess.run(self.command(run, "--max-steps", "8"), capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # The "GPU" model: another shape, its own history (training.json as gpu_train.py writes it).
        cfg = {**T.load_export(self.source)[0], "hidden_size": 32, "intermediate_size": 64, "head_dim": 16}
        gpu = os.path.join(self.tmp, "gpu")
        os.makedirs(gpu)
        T.export(T.Llama(cfg), cfg, 15, os.path.join(DEFAULT, "tokenizer.json"), gpu, torch.bfloat16)
        with open(os.path.join(gpu, "loss.csv"), "w") as f:
            f.write("step,tokens,train_loss,heldout_loss\n900,5000000,0.5,0.6\n")
        with open(os.path.join(gpu, "training.json"), "w") as f:
            json.dump({"step": 900, "tokens": 5_000_000, "cpu_seconds": 0.0, "gpu_seconds": 420.0,
                       "gpu": "NVIDIA H100 80GB HBM3"}, f)
        with open(os.path.join(run, "pid"), "w") as f:
            f.write("999999999\n")  # a stale pid file does not block
        r = subprocess.run([sys.executable, os.path.join(HERE, "continuous.py"), "rebase", "--run-dir", run],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        prev = [n for n in os.listdir(run) if n.startswith("previous-")]
        self.assertEqual(len(prev), 1)
        self.assertTrue(os.path.exists(os.path.join(run, prev[0], "ckpt.pt")))
        self.assertFalse(os.path.exists(os.path.join(run, "ckpt.pt")))
        # The next run (its data made again, as a new machine's would be) starts from the GPU model.
        for k, docs in enumerate(self.chunks):
            write_split(os.path.join(run, "chunks", f"chunk-{k:06d}"), "train", docs)
        write_split(os.path.join(run, "heldout", "tok"), "val", self.heldout)
        cmd = self.command(run, "--max-steps", "903")
        cmd[cmd.index("--from") + 1] = gpu
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"new run from {gpu} at step 900, 5,000,000 tokens", r.stdout)
        st = self.state(run)
        self.assertEqual(st["cfg"]["hidden_size"], 32)
        self.assertEqual(st["step"], 903)
        self.assertEqual(st["settings"]["from"]["gpu_seconds"], 420.0)
        self.assertEqual(st["rows"][0][:2], (900, 5_000_000))


if __name__ == "__main__":
    unittest.main()
