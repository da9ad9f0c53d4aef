#!/usr/bin/env python3
"""Tests of benchmarks/cuda/report.py merge (ctest gpu.Report): the lines and
verdicts the GPU machine's summary is read from, on JSON lines shaped as
tpc-cuda-bench, gemm_attention_torch.py and the step stages print them. The
numbers are made up here: these test the arithmetic and the labels, not a
GPU."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "benchmarks", "cuda"))
import report  # noqa: E402


def gemm(tool, tflops, case="gemm:8192,8192,8192"):
    return {"tool": tool, "kind": "gemm", "case": case, "m": 8192,
            "k": 8192, "n": 8192, "layout": "in_out", "tflops": tflops}


def attention(tool, tflops, kind="attn", seq=4096, causal=True, **extra):
    case = f"{kind}:4,32,{seq},128,{'causal' if causal else 'full'}"
    return dict({"tool": tool, "kind": kind, "case": case, "b": 4, "h": 32,
                 "kv": 32, "s": seq, "d": 128, "causal": causal,
                 "tflops": tflops}, **extra)


def merge(entries):
    """(printed lines, the JSON written) of merge over `entries`."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "bench.json")
        text = "\n".join(json.dumps(e) for e in entries) + "\nnot json\n"
        out = io.StringIO()
        saved = sys.stdin
        sys.stdin = io.StringIO(text)
        try:
            with contextlib.redirect_stdout(out):
                rc = report.merge(type("Args", (), {"json": path})())
        finally:
            sys.stdin = saved
        assert rc == 0
        with open(path) as f:
            return out.getvalue().splitlines(), json.load(f)


class MergeTest(unittest.TestCase):
    def test_gemm_ratio_and_target(self):
        lines, result = merge([gemm("tpc", 760.0), gemm("torch", 800.0)])
        self.assertEqual(lines, [
            "gemm 8192x8192x8192 (in_out): tpc 760.0 TFLOP/s vs torch 800.0 "
            "TFLOP/s (0.95)  target >= 95% of torch: met"])
        row = result["kernels"][0]
        self.assertAlmostEqual(row["ratio"], 0.95)
        self.assertTrue(row["met"])
        lines, _ = merge([gemm("tpc", 700.0), gemm("torch", 800.0)])
        self.assertTrue(lines[0].endswith("target >= 95% of torch: MISSED"))

    def test_gemm_other_algorithms_reported_not_compared(self):
        # TPCRT_CUDA_GEMM_ALGO=N's runs (tpc-algoN) beside the device's.
        lines, result = merge([gemm("tpc", 740.0), gemm("tpc-algo2", 790.0),
                               gemm("tpc-algo1", 700.0), gemm("torch", 800.0)])
        self.assertEqual(lines, [
            "gemm 8192x8192x8192 (in_out): tpc 740.0 TFLOP/s (heuristic's "
            "#1 700.0, #2 790.0) vs torch 800.0 TFLOP/s (0.93)  target >= "
            "95% of torch: MISSED"])
        row = result["kernels"][0]
        self.assertEqual(row["tpc_algo_tflops"], {"1": 700.0, "2": 790.0})
        self.assertAlmostEqual(row["ratio"], 740.0 / 800.0)

    def test_attention_target_only_at_its_shape(self):
        backends = {"FLASH_ATTENTION": 450.0, "CUDNN_ATTENTION": 520.0,
                    "EFFICIENT_ATTENTION": "refused: no"}
        lines, result = merge([
            attention("tpc", 410.0), attention("torch", 500.0,
                                               backends_tflops=backends),
            attention("tpc", 380.0, seq=2048),
            attention("tpc", 350.0, causal=False)])
        self.assertEqual(lines[0],
                         "attention b 4 h 32 s 4096 d 128 causal: tpc 410.0 "
                         "TFLOP/s vs torch 500.0 TFLOP/s (0.82) [torch's best "
                         "SDPA backend CUDNN_ATTENTION: 520.0]  target >= 400 "
                         "TFLOP/s: met")
        self.assertEqual(result["kernels"][0]["torch_best_backend"],
                         "CUDNN_ATTENTION")
        # s 2048 and the full (non-causal) case carry no target.
        for line in lines[1:]:
            self.assertNotIn("target", line)
        self.assertEqual(len(lines), 3)

    def test_attention_with_dropout_is_said_and_has_no_target(self):
        case = "attn:4,32,4096,128,causal,dropout"
        lines, result = merge([
            attention("tpc", 150.0, dropout=0.1, case=case),
            attention("torch", 300.0, dropout=0.1, case=case)])
        self.assertEqual(lines, [
            "attention b 4 h 32 s 4096 d 128 causal dropout 0.1: tpc 150.0 "
            "TFLOP/s vs torch 300.0 TFLOP/s (0.50)"])
        self.assertNotIn("target", result["kernels"][0])

    def test_attention_backward_is_its_own_case_without_target(self):
        lines, result = merge([
            attention("tpc", 300.0), attention("tpc", 200.0, kind="attn_grad"),
            attention("torch", 250.0, kind="attn_grad")])
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].endswith("target >= 400 TFLOP/s: MISSED"))
        self.assertEqual(lines[1],
                         "attention backward b 4 h 32 s 4096 d 128 causal: "
                         "tpc 200.0 TFLOP/s vs torch 250.0 TFLOP/s (0.80)")
        self.assertNotIn("met", result["kernels"][1])

    def test_cudnn_faster_is_compared_and_mma_only_reported(self):
        lines, result = merge([
            attention("tpc", 390.0), attention("tpc-cudnn", 430.0),
            attention("tpc-mma", 330.0), attention("torch", 500.0)])
        self.assertEqual(lines[0],
                         "attention b 4 h 32 s 4096 d 128 causal: tpc 390.0 "
                         "TFLOP/s (mma.sync 330.0), with cuDNN 430.0 vs torch "
                         "500.0 TFLOP/s (0.86)  target >= 400 TFLOP/s: met")
        row = result["kernels"][0]
        self.assertEqual(row["tpc_best"], "cudnn")
        self.assertEqual(row["tpc_mma_tflops"], 330.0)

    def test_mma_alone_counts_as_tpc(self):
        lines, result = merge([attention("tpc-mma", 420.0)])
        self.assertEqual(lines[0],
                         "attention b 4 h 32 s 4096 d 128 causal: tpc 420.0 "
                         "TFLOP/s on mma.sync vs torch - TFLOP/s  target >= "
                         "400 TFLOP/s: met")
        self.assertEqual(result["kernels"][0]["tpc_best"], "mma")

    def test_gpt_step_speed_memory_and_prediction(self):
        common = {"kind": "gpt_step", "hidden": 2048, "layers": 8,
                  "seq": 2048, "batch": 8, "vocab": 50257}
        tpc = dict(common, tool="tpc", step_ms=400.0, mfu=0.5,
                   device_bytes=3 * 2**30, planned_peak_bytes=2 * 2**30,
                   peak_bytes=2 * 2**30, predicted_step_ms=320.0,
                   predicted_mfu=0.625, predicted_hardware="h200")
        torch = dict(common, tool="torch", step_ms=500.0, mfu=0.4,
                     impl="hf", peak_memory_gib=4.5)
        lines, result = merge([tpc, torch])
        self.assertEqual(lines, [
            "GPT-2 step (h 2048, L 8, s 2048, B 8, V 50257): tpc 400.0 ms MFU "
            "50.0% vs torch 500.0 ms MFU 40.0% [hf] (tpc/torch speed 1.25)",
            "GPT-2 step memory: tpc device memory 3.00 GiB in one allocation "
            "(planned peak 2.00, peak 2.00) vs torch max_memory_allocated "
            "4.50 GiB",
            "GPT-2 step predicted by tpc-compile --hardware h200: 320.0 ms "
            "MFU 62.5%, measured 400.0 ms (measured/predicted 1.25)"])
        self.assertAlmostEqual(result["gpt_step"]["speedup"], 1.25)

    def test_device_memory_in_use_read_and_judged(self):
        with tempfile.TemporaryDirectory() as folder:
            log = os.path.join(folder, "tpc.txt")
            with open(log, "w") as f:
                f.write("step 4 loss 1.0 grad_norm 1 lr 1 tokens_per_s 2\n"
                        "rank 0 peak_bytes 10 planned_peak_bytes 10\n"
                        "tpc-run: rank 0 device_in_use_bytes before_steps "
                        "1073741824 after_step_1 1075838976 after_step_4 "
                        "1075838976\n"
                        "tpc-run: rank 1 device_in_use_bytes before_steps 1 "
                        "after_step_1 2 after_step_4 3\n")
            found = report.memory_lines(log)
        self.assertEqual(found["in_use_before_steps"], 2**30)
        self.assertEqual(found["in_use_after_step_1"], 2**30 + 2**21)
        self.assertEqual(found["in_use_last_step"], 4)
        self.assertEqual(found["in_use_after_last_step"], 2**30 + 2**21)
        self.assertEqual(
            report.in_use_line(found),
            "GPT-2 step device memory in use (driver): 1.00 GiB before the "
            "steps, 1.00 after step 1 (+2097152 bytes), 1.00 after step 4: "
            "nothing allocated after step 1")
        found["in_use_after_last_step"] += 512
        self.assertTrue(report.in_use_line(found).endswith(
            ": +512 bytes after step 1"))
        common = {"kind": "gpt_step", "hidden": 64, "layers": 2, "seq": 32,
                  "batch": 4, "vocab": 256}
        lines, _ = merge([dict(common, tool="tpc", step_ms=1.0, mfu=0.1,
                               **found)])
        self.assertEqual(lines[-1], report.in_use_line(found))

    def test_nothing(self):
        lines, result = merge([])
        self.assertEqual(lines, ["benchmarks: no results"])
        self.assertEqual(result["kernels"], [])

    def test_mfu_formula(self):
        # 72·B·L·s·h²·(1 + s/(6h) + V/(12·h·L)) over t · 989e12.
        flops = 72 * 8 * 8 * 2048 * 2048**2 * (
            1 + 2048 / (6 * 2048) + 50257 / (12 * 2048 * 8))
        self.assertAlmostEqual(report.step_flops(8, 2048, 2048, 8, 50257),
                               flops)
        self.assertAlmostEqual(report.mfu(1.0, 8, 2048, 2048, 8, 50257),
                               flops / 989e12)


if __name__ == "__main__":
    unittest.main()
