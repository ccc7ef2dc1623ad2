"""Tests of train/lengths.py: /usr/bin/python3 -m unittest discover -s train -v"""
import os
import sys
import unittest

try:
    import numpy as np
except ImportError as e:  # pragma: no cover
    np, MISSING = None, f"needs numpy ({e})"
else:
    MISSING = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


@unittest.skipIf(MISSING, MISSING)
class LengthsTest(unittest.TestCase):
    def test_distribution(self):
        import lengths as L
        lens = [100, 511, 512, 1499, 1500, 2048, 2049, 3000]
        rows, pct, got = L.distribution(np.concatenate([[0], np.cumsum(lens)]))
        self.assertEqual(list(got), lens)
        self.assertEqual([r[1] for r in rows], [2, 1, 1, 2, 2])
        self.assertAlmostEqual(sum(r[2] for r in rows), 1.0)
        self.assertAlmostEqual(sum(r[3] for r in rows), 1.0)
        self.assertAlmostEqual(rows[3][3], (1500 + 2048) / sum(lens))
        self.assertEqual(rows[3][0], "1500-2048")


if __name__ == "__main__":
    unittest.main()
