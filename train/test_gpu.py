"""Tests of train/gpu, the GPU run: its parts, and the whole run rehearsed on
the CPU in tiny mode (build.sh --tiny, run.sh --tiny, reassemble.py, the Go
engine loading the result and making a prediction).

  /usr/bin/python3 -m unittest discover -s train -v

What only a GPU can run (the fused attention kernel on the device,
torch.compile, BF16 autocast, the CUDA stage) is checked there by run.sh
itself; train/README.md says what was and was not rehearsed. The rehearsal
needs torch and numpy, Go, and CPython 3.11 as python3 (the tracing
interpreter it carries); without them it skips, or fails when
NDBG_REQUIRE_ORACLES is set (CI).
"""
import glob
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GPU = os.path.join(HERE, "gpu")
sys.path.insert(0, GPU)
import datagen  # noqa: E402
import outbox  # noqa: E402
import reassemble  # noqa: E402

try:
    import numpy as np
    import torch
except ImportError as e:  # pragma: no cover
    np = torch = None
    MISSING = f"needs torch and numpy ({e}); on Debian: apt-get install python3-torch python3-numpy"
else:
    MISSING = None
if MISSING and os.environ.get("NDBG_REQUIRE_ORACLES"):
    raise ImportError("NDBG_REQUIRE_ORACLES is set: " + MISSING)
if MISSING is None:
    sys.path.insert(0, HERE)
    import gpu_train as G  # noqa: E402
    import train as T  # noqa: E402

DEFAULT = os.path.join(ROOT, "weights", "default")
TINY_CFG = {"vocab_size": 4096, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16, "max_position_embeddings": 256,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False, "bos_token_id": 0,
            "eos_token_id": 1}


def read(path):
    with open(path) as f:
        return f.read()


def host_python():
    """python3 on PATH resolved (what ndbg traces with), and its version."""
    py = shutil.which("python3")
    if not py:
        return None, None
    r = subprocess.run([py, "-S", "-c", "import os, sys; print(os.path.realpath(sys.executable)); "
                        "print('%d.%d.%d' % sys.version_info[:3])"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, None
    exe, ver = r.stdout.split()
    return exe, ver


def rehearsal_missing():
    if MISSING:
        return MISSING
    if not shutil.which("go"):
        return "needs Go (it builds ndbg)"
    exe, ver = host_python()
    if not ver or not ver.startswith("3.11."):
        return f"needs CPython 3.11 as python3 (the interpreter the run carries), found {ver}"
    return None


REHEARSAL_MISSING = rehearsal_missing()
if REHEARSAL_MISSING and os.environ.get("NDBG_REQUIRE_ORACLES"):
    raise ImportError("NDBG_REQUIRE_ORACLES is set: " + REHEARSAL_MISSING)


class OutboxTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ndbg-outbox-")
        self.out = os.path.join(self.tmp, "out")
        os.makedirs(self.out)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_place_replaces_whole_and_removes_stale(self):
        """Files are moved in whole (the stage beside $OUT is on its file
        system), in the order given; files of the last export that this one
        lacks are removed; the stage is left empty."""
        stage, same_fs = outbox.pick_stage(self.out)
        self.assertTrue(same_fs)
        self.assertEqual(os.path.dirname(stage), self.tmp, "the stage is beside OUT, not in it")
        dest = os.path.join(self.out, "model")
        os.makedirs(dest)
        for n in ("a.safetensors", "stale.safetensors", "index.json"):
            with open(os.path.join(dest, n), "w") as f:
                f.write("old " + n)
        for n in ("a.safetensors", "index.json"):
            with open(os.path.join(stage, n), "w") as f:
                f.write("new " + n)
        inode = os.stat(os.path.join(stage, "a.safetensors")).st_ino
        outbox.place(stage, True, ["a.safetensors", "index.json"], dest)
        self.assertEqual(sorted(os.listdir(dest)), ["a.safetensors", "index.json"])
        self.assertEqual(read(os.path.join(dest, "a.safetensors")), "new a.safetensors")
        self.assertEqual(os.stat(os.path.join(dest, "a.safetensors")).st_ino, inode, "renamed, not copied")
        self.assertEqual(os.listdir(stage), [])
        # Across file systems: copied in through name.tmp, still replaced whole.
        with open(os.path.join(stage, "a.safetensors"), "w") as f:
            f.write("newer")
        outbox.place(stage, False, ["a.safetensors"], dest)
        self.assertEqual(os.listdir(dest), ["a.safetensors"])
        self.assertEqual(read(os.path.join(dest, "a.safetensors")), "newer")
        shutil.rmtree(stage)

    def test_check_limits(self):
        """check() reports what the device tool would not bring back."""
        self.assertEqual(outbox.check(self.out), [])
        for i in range(9):
            open(os.path.join(self.out, f"f{i}"), "w").close()
        self.assertIn("9 files (at most 8)", outbox.check(self.out))
        for i in range(9):
            os.remove(os.path.join(self.out, f"f{i}"))
        with open(os.path.join(self.out, "big"), "wb") as f:
            f.truncate(outbox.MAX_FILE_BYTES + 1)
        self.assertTrue(any("big:" in p for p in outbox.check(self.out)))
        os.remove(os.path.join(self.out, "big"))
        os.makedirs(os.path.join(self.out, "a", "b", "c"))
        open(os.path.join(self.out, "a", "b", "ok"), "w").close()
        open(os.path.join(self.out, "a", "b", "c", "deep"), "w").close()
        open(os.path.join(self.out, "a", "bad name"), "w").close()
        problems = outbox.check(self.out)
        self.assertTrue(any("a/b/c/deep: more than two folders down" in p for p in problems), problems)
        self.assertTrue(any("bad name" in p for p in problems), problems)
        self.assertFalse(any("a/b/ok" in p for p in problems), problems)

    def test_pack(self):
        rep = os.path.join(self.tmp, "report")
        os.makedirs(os.path.join(rep, "cuda"))
        for n in ("run.log", os.path.join("cuda", "test.log")):
            with open(os.path.join(rep, n), "w") as f:
                f.write(n)
        outbox.pack(rep, os.path.join(self.out, "run.tgz"))
        self.assertEqual(os.listdir(self.out), ["run.tgz"], "nothing else left in OUT")
        with tarfile.open(os.path.join(self.out, "run.tgz")) as tar:
            self.assertEqual(sorted(tar.getnames()), ["cuda/test.log", "run.log"])


class DatagenTest(unittest.TestCase):
    def test_digest(self):
        """The digest covers every trajectory but those holding a memory
        address, in order."""
        with tempfile.TemporaryDirectory() as d:
            def write(lines):
                with open(os.path.join(d, "shard-00000.jsonl"), "w") as f:
                    f.write("".join(line + "\n" for line in lines))
                return datagen.digest(d)
            base = write(['{"text": "a"}', '{"text": "b"}'])
            self.assertEqual(base, write(['{"text": "a"}', '{"text": "<x at 0x7f00>"}', '{"text": "b"}']))
            self.assertNotEqual(base, write(['{"text": "b"}', '{"text": "a"}']))
            self.assertNotEqual(base, write(['{"text": "a"}', '{"text": "c"}']))

    def test_seed_ranges_are_apart(self):
        """The GPU run's seeds are neither continuous.py's (1000 + k) nor the
        held-out 2 and 99, nor the gate's fresh seeds (promote.py)."""
        self.assertGreater(datagen.CARRIED_SEED_BASE, 1_000_000)
        self.assertGreater(datagen.MACHINE_SEED_BASE, datagen.CARRIED_SEED_BASE + 50_000)
        sys.path.insert(0, HERE)
        import promote
        self.assertGreater(promote.FRESH_SEED_MIN, datagen.MACHINE_SEED_BASE + 10_000_000)


class RunDocTest(unittest.TestCase):
    def test_the_call_in_run_md(self):
        """RUN.md's device call is one a device tool takes (a command of at
        most 2000 characters, at most 8 carried paths, timeout_s at most
        600), carries what build.sh builds, runs the script that exists, and
        leaves the script's own deadlines inside its timeout."""
        with open(os.path.join(GPU, "RUN.md")) as f:
            calls = [line for line in f if line.startswith("run(")]
        self.assertEqual(len(calls), 1, calls)
        m = re.fullmatch(r'run\(command="([^"]+)", carry=(\[[^]]*\]), timeout_s=(\d+)\)\n', calls[0])
        self.assertIsNotNone(m, calls[0])
        command, carry, timeout = m.group(1), json.loads(m.group(2)), int(m.group(3))
        self.assertLessEqual(len(command), 2000)
        self.assertLessEqual(len(carry), 8)
        self.assertLessEqual(timeout, 600)
        self.assertEqual(carry, [".gpurun"])
        script = command.split()[-1]
        self.assertTrue(os.path.exists(os.path.join(ROOT, script)), script)
        with open(os.path.join(GPU, "build.sh")) as f:
            self.assertIn("out=$root/.gpurun", f.read())
        with open(os.path.join(ROOT, script)) as f:
            run_sh = f.read()
        end = int(re.search(r"TERM_AT=\$\{TERM_AT:-(\d+)\}", run_sh).group(1))
        kill = int(re.search(r"TERM_AT:-\d+\} KILL_AFTER=(\d+)", run_sh).group(1))
        self.assertLessEqual(end + kill + 20, 9 * 60, "the run ends within 9 minutes")
        self.assertLess(9 * 60, timeout)


@unittest.skipIf(MISSING, MISSING)
class TrainerPartsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ndbg-gputrain-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_families_are_continuous(self):
        import continuous
        self.assertEqual(datagen.FAMILIES, continuous.FAMILIES)

    def test_plan_files_is_what_export_writes(self):
        """The trainer's check before training (how many files, how large)
        predicts train.export's files exactly, for the tiny and the full
        model (the full one: four shards under 16 MiB, seven files)."""
        torch.manual_seed(1)
        model = T.Llama(TINY_CFG)
        names = T.export(model, TINY_CFG, 0.25, os.path.join(DEFAULT, "tokenizer.json"), self.tmp, torch.bfloat16,
                         metadata={"step": 3})
        shards = sorted(n for n in names if n.endswith(".safetensors"))
        want = G.plan_files(TINY_CFG, 0.25)
        self.assertEqual(len(shards), len(want))
        for n, size in zip(shards, want):
            head = reassemble.header(os.path.join(self.tmp, n))
            with open(os.path.join(self.tmp, n), "rb") as f:
                payload = os.path.getsize(os.path.join(self.tmp, n)) - 8 - struct.unpack("<Q", f.read(8))[0]
            self.assertEqual(payload, size, n)
            self.assertEqual(head["__metadata__"], {"step": "3"})
        args = G.parse_args(["--data", "x", "--heldout", "x", "--tokenizer", "x", "--out", "x", "--report", "x",
                             "--deadline", "0", "--python-version", "3.11"])
        full = G.model_config(args, {"vocab_size": 4096, "bos_id": 0, "eos_id": 1})
        plan = G.plan_files(full, args.shard_mib)
        self.assertEqual(len(plan), 4)
        self.assertLess(max(plan), outbox.MAX_FILE_BYTES)
        self.assertLess(sum(plan), outbox.MAX_TOTAL_BYTES - (1 << 20), "room for the tokenizer, config and report")
        params = sum(p.numel() for p in T.Llama(full).parameters())
        self.assertEqual(sum(plan), 2 * params)

    def test_reassemble_refuses_mixed_or_cut_exports(self):
        """A checkpoint whose files come from two exports (a kill between two
        renames), or whose shard was cut short, is refused with a reason;
        a whole one is accepted."""
        model = os.path.join(self.tmp, "got", "model")
        os.makedirs(model)
        torch.manual_seed(2)
        m = T.Llama(TINY_CFG)
        T.export(m, TINY_CFG, 0.25, os.path.join(DEFAULT, "tokenizer.json"), model, torch.bfloat16, {"step": 5})
        self.assertEqual(reassemble.check_model(model)[0], "5")
        other = os.path.join(self.tmp, "other")
        os.makedirs(other)
        T.export(m, TINY_CFG, 0.25, os.path.join(DEFAULT, "tokenizer.json"), other, torch.bfloat16, {"step": 6})
        first = sorted(glob.glob(os.path.join(model, "model-*.safetensors")))[0]
        shutil.copyfile(os.path.join(other, os.path.basename(first)), first)
        with self.assertRaisesRegex(ValueError, "different exports"):
            reassemble.check_model(model)
        T.export(m, TINY_CFG, 0.25, os.path.join(DEFAULT, "tokenizer.json"), model, torch.bfloat16, {"step": 5})
        with open(first, "r+b") as f:
            f.truncate(os.path.getsize(first) - 10)
        with self.assertRaisesRegex(ValueError, "cut short"):
            reassemble.check_model(model)

    def _chunk(self, name, python, docs=6):
        d = os.path.join(self.tmp, "data", name)
        os.makedirs(d)
        rng = np.random.default_rng(len(name))
        toks = [rng.integers(2, 4096, size=20) for _ in range(docs)]
        np.concatenate(toks).astype("<u4").tofile(os.path.join(d, "train.tokens"))
        np.concatenate([[0], np.cumsum([len(t) for t in toks])]).astype("<u8").tofile(os.path.join(d, "train.offsets"))
        np.full(docs, 4, dtype="<u4").tofile(os.path.join(d, "train.prompt"))
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"vocab_size": 4096, "bos_id": 0, "eos_id": 1, "pad_id": 1, "python": python}, f)

    def _trainer(self, *extra):
        """gpu_train.py on synthetic chunks, a tiny model, on the CPU."""
        for i in range(3):
            self._chunk(f"chunk-00000000000{i}", "3.11.7", docs=40)
        held = os.path.join(self.tmp, "heldout")
        os.makedirs(held)
        for ext in ("tokens", "offsets", "prompt"):
            shutil.copyfile(os.path.join(self.tmp, "data", "chunk-000000000000", "train." + ext),
                            os.path.join(held, "val." + ext))
        shutil.copyfile(os.path.join(self.tmp, "data", "chunk-000000000000", "meta.json"),
                        os.path.join(held, "meta.json"))
        out = os.path.join(self.tmp, "OUT")
        cmd = [sys.executable, os.path.join(GPU, "gpu_train.py"), "--data", os.path.join(self.tmp, "data"),
               "--heldout", held, "--tokenizer", os.path.join(DEFAULT, "tokenizer.json"),
               "--out", os.path.join(out, "model"), "--report", os.path.join(self.tmp, "report"),
               "--report-out", os.path.join(out, "run.tgz"), "--python-version", "3.11", "--device", "cpu",
               "--threads", "1", "--layers", "1", "--hidden", "32", "--heads", "2", "--ffn", "64", "--block", "64",
               "--batch-tokens", "256", "--warmup", "1", "--shard-mib", "0.3", "--first-export", "0",
               "--export-every", "0", "--export-margin", "0", "--log-every", "0", "--eval-batches", "1",
               "--eval-rows", "4", *extra]
        return cmd, out

    def _report(self, out):
        with tarfile.open(os.path.join(out, "run.tgz")) as tar:
            return json.load(tar.extractfile("training.json"))

    def test_non_finite_loss_keeps_the_last_good_export(self):
        """Weights that blow up (a learning rate of 1e6) stop the training;
        OUT keeps the last export made with a finite loss, and the report
        says why and which step the weights are."""
        cmd, out = self._trainer("--deadline", str(time.time() + 120), "--lr", "1e6")
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        t = self._report(out)
        self.assertIn("non-finite", t["stopped"])
        self.assertGreater(t["steps_trained"], t["step"])
        self.assertGreaterEqual(t["step"], 1)
        step, _ = reassemble.check_model(os.path.join(out, "model"))
        self.assertEqual(int(step), t["step"])
        _, sd = T.load_export(os.path.join(out, "model"))
        self.assertTrue(all(torch.isfinite(v).all() for v in sd.values()), "the exported weights are finite")
        self.assertEqual(outbox.check(out), [])

    def test_sigterm_exports_and_ends(self):
        """SIGTERM (run.sh's timeout) ends training at the next step with a
        final export: the checkpoint in OUT is the last step's."""
        cmd, out = self._trainer("--deadline", str(time.time() + 600))
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.time() + 240
            while not os.path.exists(os.path.join(out, "run.tgz")) and time.time() < deadline:
                time.sleep(0.2)
            time.sleep(1)
            p.send_signal(signal.SIGTERM)
            log, _ = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 0, log)
        t = self._report(out)
        self.assertEqual(t["stopped"], "signal 15")
        self.assertEqual(t["step"], t["steps_trained"], "the final export is the last step")
        self.assertEqual(int(reassemble.check_model(os.path.join(out, "model"))[0]), t["step"])

    def test_feed_takes_only_the_version_and_fresh_data_first(self):
        """The feed skips chunks traced by another Python (3.12's traces of
        comprehensions differ), takes the others oldest first, marks each
        consumed for datagen.py, and only then takes one again, counted as
        repeated; widths are padded to WIDTH_MULTIPLE without loss there."""
        self._chunk("chunk-000000000002", "3.11.7")
        self._chunk("chunk-000000000001", "3.12.1")
        self._chunk("chunk-000000000003", "3.11.2")
        feed = G.Feed(os.path.join(self.tmp, "data"), "3.11", 1, 4096, 64, 256, 1, torch.device("cpu"), prefetch=1)
        try:
            seen = 0
            while feed.stats["chunks_repeated"] == 0:
                x, y, m, info = feed.get()
                self.assertEqual(x.shape[1] % G.WIDTH_MULTIPLE, 0)
                self.assertEqual(int(m.sum()), info["kept"])
                self.assertEqual(info["tokens"], 19 * x.shape[0])
                seen += info["kept"]
            self.assertIn("chunk-000000000001", feed.skipped)
            self.assertIn("3.12.1", feed.skipped["chunk-000000000001"])
            self.assertEqual(feed.stats["chunks_fresh"], 2)
            self.assertEqual(feed.stats["tokens_fresh"], 2 * 6 * 16)
            for n in ("chunk-000000000002", "chunk-000000000003"):
                self.assertTrue(os.path.exists(os.path.join(self.tmp, "data", n, ".consumed")))
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "data", "chunk-000000000001", ".consumed")))
        finally:
            feed.close()


@unittest.skipIf(REHEARSAL_MISSING, REHEARSAL_MISSING)
class RehearsalTest(unittest.TestCase):
    """The GPU run's one command, in tiny mode on this CPU."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ndbg-rehearsal-")
        cls.gpurun = os.path.join(cls.tmp, "gpurun")
        r = subprocess.run(["bash", os.path.join(GPU, "build.sh"), "--tiny", "--out", cls.gpurun], cwd=ROOT,
                           capture_output=True, text=True)
        cls.build_log = r.stdout + r.stderr
        cls.build_rc = r.returncode

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.assertEqual(self.build_rc, 0, self.build_log[-3000:])

    def test_the_bundle_runs_without_the_hosts_python(self):
        """The carried CPython runs in a root that holds nothing of the
        host's but /bin/sh and the C library /bin/sh needs: its
        interpreter, libraries and standard library are its own."""
        if subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True).returncode != 0:
            self.skipTest("bubblewrap cannot run here")
        d = os.path.join(self.tmp, "bundle")
        os.makedirs(d, exist_ok=True)
        with tarfile.open(os.path.join(self.gpurun, "py311.tar.xz")) as tar:
            tar.extractall(d)
        sh = os.path.realpath("/bin/sh")
        binds = ["--ro-bind", os.path.join(d, "py"), "/py", "--ro-bind", sh, "/bin/sh"]
        for lib in subprocess.run(["ldd", sh], capture_output=True, text=True).stdout.split("\n"):
            p = [w for w in lib.split() if w.startswith("/")]
            if p:
                binds += ["--ro-bind", os.path.realpath(p[0]), p[0]]
        code = ("import sys, json, ast, re, resource, signal, hmac, base64; "
                "print('%d.%d.%d' % sys.version_info[:3], sys.prefix, json.dumps(ast.literal_eval('[1, 2]')))")
        r = subprocess.run(["bwrap", *binds, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--unshare-all",
                            "--die-with-parent", "/py/bin/python3", "-S", "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, ver = host_python()
        self.assertEqual(r.stdout.split(), [ver, "/py", "[1,", "2]"])

    def test_golden_check_tells_the_versions_apart(self):
        """datagen.py golden passes for the carried interpreter and fails for
        a Python 3.12 (PEP 709 inlines comprehensions, so its traces differ)
        even when golden.json is told that version: the digest, not only the
        version string, decides."""
        d = os.path.join(self.tmp, "golden")
        os.makedirs(d, exist_ok=True)
        with tarfile.open(os.path.join(self.gpurun, "ndbg.tar.xz")) as tar:
            tar.extractall(d)
        with tarfile.open(os.path.join(self.gpurun, "py311.tar.xz")) as tar:
            tar.extractall(d)
        ndbg = os.path.join(d, "ndbg")
        golden = os.path.join(self.gpurun, "golden.json")
        base = [sys.executable, os.path.join(GPU, "datagen.py"), "golden", "--ndbg", ndbg, "--golden"]
        r = subprocess.run(base + [golden, "--python", os.path.join(d, "py", "bin", "python3"), "--unsandboxed",
                                   "--out", os.path.join(d, "a")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("golden check passed", r.stdout)
        py312 = None
        for cand in [shutil.which("python3.12")] + sorted(glob.glob(os.path.expanduser(
                "~/.pyenv/versions/3.12*/bin/python3.12"))):
            if cand and subprocess.run([cand, "-S", "-c", "1"], capture_output=True).returncode == 0:
                py312 = cand
                break
        if not py312:
            self.skipTest("no Python 3.12 here to show that the check tells it apart")
        with open(golden) as f:
            g = json.load(f)
        g["python"] = subprocess.run([py312, "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                                     capture_output=True, text=True).stdout.strip()
        g["n"] = 120  # enough programs that some hold a comprehension
        with open(os.path.join(d, "golden312.json"), "w") as f:
            json.dump(g, f)
        r = subprocess.run(base + [os.path.join(d, "golden312.json"), "--python", py312, "--unsandboxed", "--out",
                                   os.path.join(d, "b")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the data differs", r.stdout)

    def test_tiny_run_end_to_end(self):
        """run.sh --tiny: data checked and made, trained, exported more than
        once, split into shards, all within the device tool's limits;
        reassembled, loaded by the Go engine, one prediction made."""
        out = os.path.join(self.tmp, "OUT")
        env = dict(os.environ, OUT=out, GPURUN=self.gpurun, PY=sys.executable, WORK=os.path.join(self.tmp, "work"),
                   TINY_TRAIN_SECONDS="6")
        t0 = time.time()
        r = subprocess.run(["bash", os.path.join(GPU, "run.sh"), "--tiny"], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=300)
        log = r.stdout + r.stderr
        self.assertEqual(r.returncode, 0, log[-4000:])
        self.assertLess(time.time() - t0, 300)
        self.assertIn("golden check passed", log)
        self.assertIn("datagen started", log)
        self.assertIn("CUDA stage skipped", log)
        self.assertIn("OUT is within the device limits", log)
        self.assertEqual(outbox.check(out), [])
        model = os.path.join(out, "model")
        shards = sorted(glob.glob(os.path.join(model, "model-*.safetensors")))
        self.assertGreaterEqual(len(shards), 2, "the tiny export is split as the real one is")
        for s in shards:  # under the tiny limit (0.25 MiB), or one tensor larger than it alone
            tensors = [k for k in reassemble.header(s) if k != "__metadata__"]
            self.assertTrue(os.path.getsize(s) <= int(0.25 * 2 ** 20) + 4096 or len(tensors) == 1, s)
        self.assertEqual(sorted(os.listdir(out)), ["model", "run.tgz"])

        dest = os.path.join(self.tmp, "model")
        r = subprocess.run([sys.executable, os.path.join(GPU, "reassemble.py"), out, dest], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(dest, "training.json")) as f:
            t = json.load(f)
        self.assertGreaterEqual(t["exports"], 2, "a periodic export and the final one")
        self.assertGreater(t["step"], 0)
        self.assertEqual(t["stopped"], "deadline")
        self.assertTrue(t["data"]["python"].startswith("3.11"))
        self.assertGreaterEqual(t["data"]["chunks_fresh"], 1)
        self.assertIn("blocked", t["attention"])
        for n in ("loss.csv", "README.md", "config.json", "tokenizer.json", "run/run.log", "run/golden.txt"):
            self.assertTrue(os.path.exists(os.path.join(dest, n)), n)
        with open(os.path.join(dest, "run", "golden.txt")) as f:
            self.assertIn("WITHOUT the sandbox", f.read())

        # The Go engine loads the folder (shards through their index) and predicts.
        ndbg = os.path.join(self.tmp, "ndbg")
        subprocess.run(["go", "build", "-o", ndbg, "./cmd/ndbg"], cwd=ROOT, check=True)
        r = subprocess.run([ndbg, "predict", "--model", dest, "--program", os.path.join(ROOT, "examples", "mean.py"),
                            "--call", "f([3, None, 4])", "--action", "step_into"], capture_output=True, text=True,
                           cwd=ROOT)
        self.assertEqual(r.returncode, 0, r.stderr)
        state = json.loads(r.stdout)
        self.assertIn(state["event"], ("call", "line", "return", "exception"))


if __name__ == "__main__":
    unittest.main()
