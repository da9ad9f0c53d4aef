#!/usr/bin/env python3
"""Tests of compare_dumps.py (ctest gpu.CompareDumps): the verdicts the GPU
machine's device check rests on, on safetensors files written here."""

import json
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_dumps  # noqa: E402


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, values)}; F32, BF16 (given as floats,
    truncated) or I64."""
    header, body = {}, b""
    for name, (dtype, values) in tensors.items():
        if dtype == "F32":
            raw = struct.pack(f"<{len(values)}f", *values)
        elif dtype == "BF16":
            raw = b"".join(
                struct.pack("<H", struct.unpack("<I", struct.pack("<f", v))[0]
                            >> 16) for v in values)
        else:
            raw = struct.pack(f"<{len(values)}q", *values)
        header[name] = {"dtype": dtype, "shape": [len(values)],
                        "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


class CompareDumps(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def pair(self, a, b):
        pa = os.path.join(self.dir.name, "a.safetensors")
        pb = os.path.join(self.dir.name, "b.safetensors")
        write_safetensors(pa, a)
        write_safetensors(pb, b)
        return pa, pb

    def verdict(self, a, b, tol, **kwargs):
        return compare_dumps.compare_pair(*self.pair(a, b), tol, **kwargs)

    def test_same_tensors_pass(self):
        t = {"w": ("F32", [1.0, -2.0, 3.0]), "step": ("I64", [2])}
        passed, worst, failures, _, _ = self.verdict(t, t, 1e-4)
        self.assertTrue(passed, failures)
        self.assertEqual(worst[0], 0.0)

    def test_normwise_difference_over_tolerance_fails(self):
        # ||(0, 0, 3e-3)|| / ||(1, 0, 0)|| = 3e-3.
        a = {"w": ("F32", [1.0, 0.0, 0.0])}
        b = {"w": ("F32", [1.0, 0.0, 3e-3])}
        self.assertTrue(self.verdict(a, b, 4e-3)[0])
        passed, _, failures, _, _ = self.verdict(a, b, 2e-3)
        self.assertFalse(passed)
        self.assertIn("w: relative difference", failures[0])

    def test_after_adamw_doubles_the_tolerance(self):
        a = {"w": ("F32", [1.0]), "w.exp_avg": ("F32", [1.0]),
             "w.exp_avg_sq": ("F32", [1.0]), "step": ("I64", [2])}
        # Each 1.5e-2 apart, T = 1e-2.
        b = {name: ("F32", [1.015]) for name in ("w", "w.exp_avg",
                                                 "w.exp_avg_sq")}
        b["step"] = ("I64", [2])
        passed, _, failures, _, _ = self.verdict(a, b, 1e-2)
        self.assertFalse(passed)
        self.assertEqual(len(failures), 3, failures)
        passed, _, failures, _, _ = self.verdict(a, b, 1e-2, after_adamw=True)
        self.assertTrue(passed, failures)
        b["w.exp_avg_sq"] = ("F32", [1.025])
        passed, worst, failures, _, _ = self.verdict(a, b, 1e-2,
                                                     after_adamw=True)
        self.assertFalse(passed)
        self.assertEqual(worst[1], "w.exp_avg_sq")
        self.assertEqual(len(failures), 1, failures)
        self.assertIn("w.exp_avg_sq: relative difference", failures[0])
        self.assertIn("> 0.02", failures[0])
        b["step"] = ("I64", [3])  # integers stay exact
        self.assertIn("step: integers differ", "\n".join(
            self.verdict(a, b, 1e-2, after_adamw=True)[2]))

    def test_elements_whose_gradients_disagree_are_left_out(self):
        # A bias that started at zero, after AdamW's steps of lr 1e-3: its
        # first element's gradients have other signs on the two devices
        # (+-lr: 2e-3 apart), the others agree.
        a = {"b": ("F32", [1e-3, 2e-3, -2e-3, 2e-3])}
        b = {"b": ("F32", [-1e-3, 2e-3, -2e-3, 2e-3])}
        grads = ({"b": ("F32", None, [1e-6, 0.5, -0.3, 0.2])},
                 {"b": ("F32", None, [-2e-6, 0.5, -0.3, 0.2])})
        passed, _, failures, _, _ = self.verdict(a, b, 1e-2, after_adamw=True)
        self.assertFalse(passed)
        left_out = {}
        passed, worst, failures, _, _ = self.verdict(
            a, b, 1e-2, after_adamw=True, grads=grads, lr_sum=2e-3,
            left_out=left_out)
        self.assertTrue(passed, failures)
        self.assertEqual(left_out, {"b": 1})
        self.assertEqual(worst[0], 0.0)
        # Farther apart than two AdamW runs can move it: fails.
        b["b"] = ("F32", [-5e-3, 2e-3, -2e-3, 2e-3])
        passed, _, failures, _, _ = self.verdict(
            a, b, 1e-2, after_adamw=True, grads=grads, lr_sum=2e-3)
        self.assertFalse(passed)
        self.assertIn("b: an element whose first gradients disagree moved "
                      "6.000e-03 apart > 4.040e-03", failures[0])
        # The elements whose gradients agree are still held to 2 T.
        b["b"] = ("F32", [-1e-3, 2.2e-3, -2e-3, 2e-3])
        passed, _, failures, _, _ = self.verdict(
            a, b, 1e-2, after_adamw=True, grads=grads, lr_sum=2e-3)
        self.assertFalse(passed)
        self.assertIn("(without 1 elements whose first gradients disagree)",
                      failures[0])
        # Gradients a quarter apart disagree; a fifth apart agree.
        self.assertEqual(compare_dumps.disagreeing([1.0, 1.0, -1.0],
                                                   [0.74, 0.8, 1.0]), [0, 2])

    def test_main_reads_grads_and_lr_log(self):
        pa, pb = self.pair({"b": ("F32", [1e-3, 2e-3])},
                           {"b": ("F32", [-1e-3, 2e-3])})
        ga = os.path.join(self.dir.name, "ga.safetensors")
        gb = os.path.join(self.dir.name, "gb.safetensors")
        write_safetensors(ga, {"b": ("F32", [1e-6, 0.5])})
        write_safetensors(gb, {"b": ("F32", [-1e-6, 0.5])})
        log = os.path.join(self.dir.name, "run.txt")
        with open(log, "w") as f:
            f.write("step 1 loss 5.5 grad_norm 1.6 lr 0.001 tokens_per_s 9\n"
                    "step 2 loss 5.3 grad_norm 1.4 lr 0.001 tokens_per_s 9\n")
        args = ["--tol", "1e-2", "--after-adamw", pa, pb]
        self.assertEqual(compare_dumps.main(args), 1)
        self.assertEqual(compare_dumps.main(["--grads", ga, gb] + args), 0)
        self.assertEqual(
            compare_dumps.main(["--grads", ga, gb, "--lr-log", log] + args), 0)
        with open(log, "w") as f:  # lr 4e-4 in all: 2e-3 apart is too far
            f.write("step 1 loss 5.5 lr 0.0002\nstep 2 loss 5.3 lr 0.0002\n")
        self.assertEqual(
            compare_dumps.main(["--grads", ga, gb, "--lr-log", log] + args), 1)

    def test_nan_integers_missing_and_shapes_fail(self):
        a = {"w": ("F32", [1.0, 2.0]), "n": ("I64", [3]),
             "gone": ("F32", [1.0]), "s": ("F32", [1.0, 2.0])}
        b = {"w": ("F32", [1.0, float("nan")]), "n": ("I64", [4]),
             "s": ("F32", [1.0])}
        passed, _, failures, _, _ = self.verdict(a, b, 1.0)
        self.assertFalse(passed)
        text = "\n".join(failures)
        for want in ("w: NaN or infinity", "n: integers differ",
                     "gone: missing from", "s: F32[2] vs F32[1]"):
            self.assertIn(want, text)

    def test_tolerance_zero_means_the_same_values(self):
        a = {"w": ("F32", [1.0, 2.0])}
        self.assertTrue(self.verdict(a, a, 0.0, after_adamw=True)[0])
        b = {"w": ("F32", [1.0, 2.0000002])}
        self.assertFalse(self.verdict(a, b, 0.0, after_adamw=True)[0])

    def test_bf16_is_read(self):
        a = {"w": ("BF16", [1.0, -2.5])}
        b = {"w": ("BF16", [1.0, -2.515625])}  # one bf16 unit apart
        _, worst, _, _, _ = self.verdict(a, b, 1.0)
        self.assertAlmostEqual(worst[0], 0.015625 / (1 + 2.515625 ** 2)
                               ** 0.5, places=9)

    def test_skip_leaves_out_and_counts(self):
        a = {"attn.c_attn.bias": ("F32", [1.0]), "w": ("F32", [1.0])}
        b = {"attn.c_attn.bias": ("F32", [5.0]), "w": ("F32", [1.0])}
        import re
        passed, _, _, _, skipped = self.verdict(
            a, b, 1e-4, skip=re.compile(r"attn\.c_attn\.bias"))
        self.assertTrue(passed)
        self.assertEqual(skipped, ["attn.c_attn.bias"])

    def test_reference_passes_a_device_no_farther_from_float32(self):
        # Two bf16 runs 3e-2 apart (T = 2e-2), each ~2e-2 from the float32
        # run r: B as close to r as A, or within 2 x A's distance, passes.
        r = {"w": ("F32", [1.0, 0.0]), "step": ("I64", [1])}
        a = {"w": ("F32", [1.0, 0.02]), "step": ("I64", [1])}
        b = {"w": ("F32", [1.0, -0.01]), "step": ("I64", [1])}
        pr = os.path.join(self.dir.name, "r.safetensors")
        write_safetensors(pr, r)
        passed, _, failures, _, _ = self.verdict(a, b, 2e-2)
        self.assertFalse(passed)
        near = {}
        passed, _, failures, _, _ = self.verdict(
            a, b, 2e-2, reference=pr, within_reference=near)
        self.assertTrue(passed, failures)
        self.assertEqual(sorted(near), ["w"])
        rel, ea, eb = near["w"]
        self.assertAlmostEqual(ea, 0.02, places=6)
        self.assertAlmostEqual(eb, 0.01, places=6)
        # B farther from the float32 run than 2 x A: fails, saying both.
        b["w"] = ("F32", [1.0, 0.05])
        a["w"] = ("F32", [1.0, 0.02])
        passed, _, failures, _, _ = self.verdict(a, b, 2e-2, reference=pr)
        self.assertFalse(passed)
        self.assertIn("from the float32 run 2.000e-02 (A), 5.000e-02 (B) > "
                      "2 x A's", failures[0])
        # Within 2e-2 of A stays a pass whatever r says; integers and NaN
        # are not rescued.
        b["w"] = ("F32", [1.0, 0.03])
        self.assertTrue(self.verdict(a, b, 2e-2, reference=pr)[0])
        b["step"] = ("I64", [2])
        self.assertFalse(self.verdict(a, b, 2e-2, reference=pr)[0])
        b["step"] = ("I64", [1])
        b["w"] = ("F32", [1.0, float("nan")])
        self.assertFalse(self.verdict(a, b, 2e-2, reference=pr)[0])
        # Elements left out (first gradients disagree) are left out of the
        # distances to r too.
        # (With element 2 in them, B would be 1.0 from r against A's 0.02.)
        a["w"] = ("F32", [1.0, 0.02, 0.5])
        b["w"] = ("F32", [1.0, -0.01, -0.5])
        write_safetensors(pr, {"w": ("F32", [1.0, 0.0, 0.5])})
        grads = ({"w": ("F32", None, [1.0, 1.0, 1e-6])},
                 {"w": ("F32", None, [1.0, 1.0, -1e-6])})
        passed, _, failures, _, _ = self.verdict(
            a, b, 1e-2, after_adamw=True, grads=grads, reference=pr)
        self.assertTrue(passed, failures)
        self.assertEqual(compare_dumps.reference_distances(
            [1.0, 0.02, 0.5], [1.0, -0.01, -0.5], [1.0, 0.0, 0.5])[1] > 0.5,
            True)
        # main: --reference once per pair, in order.
        pa, pb = self.pair({"w": ("F32", [1.0, 0.02])},
                           {"w": ("F32", [1.0, -0.01])})
        write_safetensors(pr, {"w": ("F32", [1.0, 0.0])})
        self.assertEqual(compare_dumps.main(["--tol", "0.02", pa, pb]), 1)
        self.assertEqual(compare_dumps.main(
            ["--tol", "0.02", "--reference", pr, pa, pb]), 0)
        with self.assertRaises(SystemExit):
            compare_dumps.main(["--tol", "0.02", "--reference", pr,
                                "--reference", pr, pa, pb])

    def test_main_exit_status(self):
        pa, pb = self.pair({"w": ("F32", [1.0])}, {"w": ("F32", [1.1])})
        self.assertEqual(compare_dumps.main(["--tol", "0.2", pa, pb]), 0)
        self.assertEqual(compare_dumps.main(["--tol", "0.01", pa, pb]), 1)
        self.assertEqual(compare_dumps.main(["--tol", "0.06",
                                             "--after-adamw", pa, pb]), 0)
        self.assertEqual(compare_dumps.main(["--tol", "0.04",
                                             "--after-adamw", pa, pb]), 1)
        self.assertEqual(compare_dumps.main([pa, pa + ".missing"]), 2)


if __name__ == "__main__":
    unittest.main()
