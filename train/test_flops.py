"""Tests of train/flops.py: /usr/bin/python3 -m unittest discover -s train -v"""
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    import numpy  # noqa: F401
    import torch  # noqa: F401
except ImportError as e:  # pragma: no cover
    MISSING = f"needs torch and numpy ({e})"
else:
    MISSING = None
    sys.path.insert(0, HERE)
    import flops as FL
    import train as T


@unittest.skipIf(MISSING, MISSING)
class FlopsTest(unittest.TestCase):
    CFG = {"num_hidden_layers": 2, "hidden_size": 10}

    def test_step_flops(self):
        b = T.ATTENTION_BLOCK
        # old: every position's logits, the whole square of query-key pairs
        self.assertEqual(FL.step_flops(self.CFG, 100, 7, 3, 2 * b, 5, "old"),
                         6 * 100 * 3 * 2 * b + 6 * 7 * 3 * 2 * b + 12 * 2 * 10 * (2 * b) ** 2 * 3)
        # new: logits at the 5 kept positions, each block of queries against the keys up to its end
        self.assertEqual(FL.step_flops(self.CFG, 100, 7, 3, 2 * b, 5, "new"),
                         6 * 100 * 3 * 2 * b + 6 * 7 * 5 + 12 * 2 * 10 * (b * b + b * 2 * b) * 3)
        self.assertEqual(FL.step_flops(self.CFG, 0, 0, 1, 5, 5, "new"), 12 * 2 * 10 * 25)

    def test_runs(self):
        """One tiny step of each variant, a table row each."""
        r = subprocess.run([sys.executable, os.path.join(HERE, "flops.py"), "--shapes", "1x9", "--steps", "1",
                            "--prompt", "0.5"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line for line in r.stdout.splitlines() if line.startswith("| 1x9 |")]
        self.assertEqual([row.split("|")[2].strip() for row in rows], ["old", "new"], r.stdout)
        self.assertEqual(rows[1].split("|")[4].strip(), "5", "loss tokens: the 5 after the prompt's 4")


if __name__ == "__main__":
    unittest.main()
