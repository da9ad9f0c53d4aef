#!/usr/bin/env python3
"""Tests of benchmarks/cuda/report.py merge and trace-ops (ctest gpu.Report): the lines and
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

    def test_gemm_with_unaligned_rows_gives_its_fraction_of_the_peak(self):
        # N = 50257: rows of no whole 16 bytes; 98.9 TFLOP/s is 0.1 of 989.
        odd = [dict(gemm(tool, tflops, "gemm:16384,2048,50257,out_in"),
                    m=16384, k=2048, n=50257, layout="out_in")
               for tool, tflops in (("tpc", 98.9), ("torch", 101.8))]
        lines, result = merge(odd)
        self.assertEqual(lines, [
            "gemm 16384x2048x50257 (out_in): tpc 98.9 TFLOP/s vs torch 101.8 "
            "TFLOP/s (0.97)  target >= 95% of torch: met  [rows of no whole "
            "16 bytes: 0.100 of the bf16 peak, efficiency.gemm_unaligned]"])
        self.assertAlmostEqual(result["kernels"][0]["fraction_of_peak"], 0.1)
        # Whole rows: none.
        lines, result = merge([gemm("tpc", 760.0)])
        self.assertNotIn("fraction_of_peak", result["kernels"][0])

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


def trace_ops(events, report_json=None, rank=0, **dims):
    """The lines trace-ops prints for tpc-run --trace `events` ((kernel,
    opcode, step, µs) of rank `rank`), with `report_json` as --report."""
    trace = {"traceEvents": [
        {"name": op, "ph": "X", "pid": rank, "ts": 0, "dur": us,
         "args": {"kernel": k, "step": step}} for k, op, step, us in events],
        "tpcTiming": "device"}
    with tempfile.TemporaryDirectory() as folder:
        paths = {}
        for name, content in (("trace", trace), ("report", report_json)):
            if content is not None:
                paths[name] = os.path.join(folder, name + ".json")
                with open(paths[name], "w") as f:
                    json.dump(content, f)
        args = dict({"trace": paths["trace"], "step": None, "top": 2,
                     "report": paths.get("report"), "batch": None,
                     "calibrate": None, "write": None}, **dims)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = report.trace_ops(type("Args", (), args)())
        return rc, out.getvalue().splitlines()


class TraceOpsTest(unittest.TestCase):
    # Step 2: kernels 0-1 a batch of casts, 2 a linear, 3 and 5 a fused
    # group (its time on 5, as the CUDA device's events put it), 4 a copy
    # the replay charges nothing.
    EVENTS = [(0, "cast", 1, 9.0), (0, "cast", 2, 0.0), (1, "cast", 2, 10.0),
              (2, "linear", 2, 600.0), (3, "apply_mask", 2, 0.0),
              (4, "copy", 2, 0.0), (5, "add", 2, 390.0)]

    def report(self, kernel_s, stages=1, dp=1, tp=1):
        return {"mesh": {"dp": dp, "pp": stages, "tp": tp},
                "predicted": {
                    "hardware": "h200-141gb-sxm",
                    "stages": [{"kernel_s": kernel_s}] * stages,
                    "device_fusions": {"groups": [[3, 5]],
                                       "batches": [[0, 1]]}}}

    def test_by_opcode_without_report(self):
        rc, lines = trace_ops(self.EVENTS)
        self.assertEqual(rc, 0)
        self.assertTrue(lines[0].startswith(
            "step 2 by opcode (6 kernels, 1.0 ms on the device's compute "
            "stream"), lines[0])
        self.assertIn("linear 60.0%, add 39.0%, cast 1.0%", lines[0])
        self.assertEqual(lines[1].split(), ["opcode", "calls", "ms", "share"])

    def test_kinds_of_the_report_beside_its_prediction(self):
        rc, lines = trace_ops(self.EVENTS, self.report(
            {"linear": 300e-6, "apply_mask+add": 390e-6,
             "cast batch": 20e-6}))
        self.assertEqual(rc, 0)
        self.assertIn("apply_mask+add 39.0%", lines[0])
        self.assertEqual(
            lines[1], "measured/predicted (tpc-compile --hardware "
            "h200-141gb-sxm): kernels 1.000 ms vs 0.710 ms (1.41); "
            "linear 2.00, apply_mask+add 1.00, cast batch 0.50")
        rows = {line.rsplit(None, 5)[0]: line.split()[-5:]
                for line in lines[3:7]}
        # One call per group and batch run, counted at its last member.
        self.assertEqual(rows["linear"], ["1", "0.600", "60.0%", "0.300",
                                          "2.00"])
        self.assertEqual(rows["apply_mask+add"],
                         ["1", "0.390", "39.0%", "0.390", "1.00"])
        self.assertEqual(rows["cast batch"], ["1", "0.010", "1.0%", "0.020",
                                              "0.50"])
        self.assertEqual(rows["copy"], ["1", "0.000", "0.0%", "-", "-"])
        self.assertIn("in the trace, charged nothing by the replay: copy "
                      "(0.000 ms)", lines)
        self.assertNotIn("predicted, not in the trace", "\n".join(lines))

    def test_kinds_one_side_lacks_are_listed(self):
        _, lines = trace_ops(self.EVENTS, self.report(
            {"linear": 300e-6, "apply_mask+add": 390e-6,
             "cast batch": 20e-6, "all_reduce": 1e-6}))
        self.assertIn("predicted, not in the trace: all_reduce", lines)

    def test_gemm_throughput_over_the_kinds_it_heads(self):
        # A fused linear+gelu's time is the linear's too.
        events = [(0, "linear", 1, 1e6), (1, "gelu", 1, 1e6),
                  (2, "linear", 1, 2e6)]
        report_json = self.report({"linear": 1.0, "linear+gelu": 1.0})
        report_json["predicted"]["device_fusions"] = {"groups": [[0, 1]]}
        _, lines = trace_ops(events, report_json, batch=1, seq=1, hidden=1,
                             layers=1, vocab=0)
        # 2·1·1·12 FLOPs over 4 s.
        self.assertEqual(lines[1], "TFLOP/s from the model's dimensions: "
                         f"linear {24 / 4 / 1e12:.1f}")

    def test_the_ranks_stage(self):
        # Rank 5 of dp 2 x tp 2 is on stage 1.
        report_json = self.report({"linear": 1.0}, stages=2, dp=2, tp=2)
        report_json["predicted"]["stages"][1] = {"kernel_s": {"add": 1.0}}
        _, lines = trace_ops(self.EVENTS, report_json, rank=5)
        self.assertIn("predicted, not in the trace: add", lines)
        self.assertIn("in the trace, charged nothing by the replay: "
                      "linear (0.600 ms), apply_mask+add (0.390 ms), cast "
                      "batch (0.010 ms), copy (0.000 ms)", lines)
        # Rank 8 would be on stage 2 of 2.
        rc, lines = trace_ops(self.EVENTS, report_json, rank=8)
        self.assertEqual((rc, lines), (1, []))

    def test_a_report_without_prediction(self):
        rc, _ = trace_ops(self.EVENTS, {"mesh": {}})
        self.assertEqual(rc, 1)

    def calibrated(self, hardware, events, kernel_s, report_json=None):
        """trace-ops --calibrate's lines and the description it wrote, with
        self.report(kernel_s) or `report_json` as the report."""
        with tempfile.TemporaryDirectory() as folder:
            source = os.path.join(folder, "hw.json")
            written = os.path.join(folder, "out.json")
            with open(source, "w") as f:
                json.dump(hardware, f)
            rc, lines = trace_ops(events, report_json or self.report(kernel_s),
                                  calibrate=source, write=written)
            self.assertEqual(rc, 0, lines)
            with open(written) as f:
                return lines, json.load(f)

    def test_calibrate_fits_the_memory_bound_kinds(self):
        hardware = {"name": "h200-141gb-sxm", "efficiency": {
            "gemm": {"points": [[1, 1]], "source": "s"},
            "elementwise_bandwidth": {"value": 0.5,
                                      "kinds": {"cast batch": 0.4,
                                                "gelu": 0.3},
                                      "source": "datasheet"},
            "kernel_launch_s": {"value": 5e-6, "source": "s"}}}
        events = self.EVENTS + [(6, "loss_mean", 2, 8.0)]
        lines, written = self.calibrated(hardware, events, {
            "linear": 300e-6, "apply_mask+add": 195e-6, "cast batch": 20e-6,
            "loss_mean": 6e-6})
        # apply_mask+add at the value: 0.5 x (195 - 5) / (390 - 5); the
        # cast batch at its own 0.4 x (20 - 5) / (10 - 5); loss_mean's
        # bytes are 1 us of its 6 (launch-bound); linear is priced by its
        # FLOPs; gelu did not run: kept.
        self.assertIn("calibrated from step 2 (elementwise_bandwidth.kinds, "
                      "old -> new (measured/predicted)): apply_mask+add "
                      "0.5 -> 0.2468 (2.00), cast batch 0.4 -> 1.2 (0.50)",
                      lines)
        self.assertIn("left as they were: loss_mean (launch-bound)", lines)
        elementwise = written["efficiency"]["elementwise_bandwidth"]
        self.assertEqual(elementwise["kinds"], {
            "cast batch": 1.2, "gelu": 0.3, "apply_mask+add": 0.2468})
        self.assertEqual(elementwise["value"], 0.5)
        self.assertTrue(elementwise["source"].startswith(
            "datasheet; kinds calibrated by benchmarks/cuda/report.py "
            "trace-ops --calibrate from trace.json (step 2) on "))
        hardware["efficiency"]["elementwise_bandwidth"] = elementwise
        self.assertEqual(written, hardware)

    def test_calibrate_fits_the_attention_by_the_reports_prices(self):
        hardware = {"efficiency": {
            "attention": {"value": 0.5, "source": "s"},
            "attention_own_kernels": {
                "forward": 0.3, "backward": 0.2, "forward_dropout": 0.1,
                "backward_dropout": 0.1, "source": "H100"},
            "elementwise_bandwidth": {"value": 0.5, "source": "s"},
            "kernel_launch_s": {"value": 5e-6, "source": "s"}}}
        events = self.EVENTS + [(6, "attention_qkv_lse", 2, 105.0),
                                (7, "attention_qkv_lse", 2, 100.0),
                                (8, "layer_norm", 2, 50.0)]
        report_json = self.report({
            "linear": 300e-6, "apply_mask+add": 195e-6, "cast batch": 20e-6,
            "attention_qkv_lse": 110e-6, "layer_norm": 25e-6})
        report_json["predicted"]["stages"][0]["kernel_prices"] = {
            "linear": "gemm", "apply_mask+add": "elementwise_bandwidth",
            "cast batch": "elementwise_bandwidth",
            "attention_qkv_lse": "attention_own_kernels.forward_dropout",
            "layer_norm": "mixed"}
        lines, out = self.calibrated(hardware, events, None, report_json)
        # Two calls: 0.1 x (110 - 10) / (205 - 10).
        self.assertIn("calibrated attention and gemm_unaligned (old -> new "
                      "(measured/predicted)): attention_own_kernels."
                      "forward_dropout 0.1 -> 0.05128 (1.86)", lines)
        self.assertIn("left as they were: layer_norm (mixed prices), gemm "
                      "(a curve over sizes; measured/predicted 2.00)", lines)
        own = out["efficiency"]["attention_own_kernels"]
        self.assertEqual(own["forward_dropout"], 0.05128)
        self.assertEqual(own["forward"], 0.3)
        self.assertTrue(own["source"].startswith(
            "H100; forward_dropout calibrated by benchmarks/cuda/report.py"))
        # With times per score the attention is not its products alone.
        hardware["efficiency"]["attention_score_s"] = {"forward": 1e-9}
        with tempfile.TemporaryDirectory() as folder:
            source = os.path.join(folder, "hw.json")
            with open(source, "w") as f:
                json.dump(hardware, f)
            _, lines = trace_ops(events, report_json, calibrate=source,
                                 write=os.path.join(folder, "out.json"))
        self.assertIn("attention_own_kernels.forward_dropout (the "
                      "description's attention_score_s times are not the "
                      "products'; measured/predicted 1.86)",
                      next(l for l in lines if l.startswith("left")))

    def test_calibrate_fits_the_unaligned_products_caps(self):
        hardware = {"efficiency": {
            "gemm_unaligned": {"value": 0.1,
                               "kinds": {"linear_weight_grad": 0.15},
                               "source": "H100"},
            "elementwise_bandwidth": {"value": 0.5, "source": "s"},
            "kernel_launch_s": {"value": 5e-6, "source": "s"}}}
        events = self.EVENTS + [(6, "linear_weight_grad", 2, 205.0)]
        report_json = self.report({
            "linear": 300e-6, "apply_mask+add": 195e-6, "cast batch": 20e-6,
            "linear_weight_grad": 105e-6})
        report_json["predicted"]["stages"][0]["kernel_prices"] = {
            "linear": "gemm_unaligned", "apply_mask+add": "mixed",
            "cast batch": "mixed",
            "linear_weight_grad": "gemm_unaligned.kinds.linear_weight_grad"}
        lines, out = self.calibrated(hardware, events, None, report_json)
        # The value: 0.1 x (300 - 5) / (600 - 5); the weight gradient's own
        # 0.15 x (105 - 5) / (205 - 5).
        self.assertIn("calibrated attention and gemm_unaligned (old -> new "
                      "(measured/predicted)): gemm_unaligned 0.1 -> 0.04958 "
                      "(2.00), gemm_unaligned.kinds.linear_weight_grad 0.15 "
                      "-> 0.075 (1.95)", lines)
        unaligned = out["efficiency"]["gemm_unaligned"]
        self.assertEqual(unaligned["value"], 0.04958)
        self.assertEqual(unaligned["kinds"], {"linear_weight_grad": 0.075})
        self.assertTrue(unaligned["source"].startswith(
            "H100; value calibrated by benchmarks/cuda/report.py"))
        self.assertIn("; linear_weight_grad calibrated by", unaligned["source"])

    def test_calibrate_caps_a_kind_at_the_parsers_limit(self):
        hardware = {"efficiency": {
            "elementwise_bandwidth": {"value": 0.5, "source": "s"},
            "kernel_launch_s": {"value": 0, "source": "s"}}}
        _, written = self.calibrated(
            hardware, [(2, "add", 1, 1.0)], {"add": 1.0})
        self.assertEqual(
            written["efficiency"]["elementwise_bandwidth"]["kinds"],
            {"add": report.MOST_KIND_FRACTION})

    def test_calibrate_needs_write_and_report(self):
        for argv in (["--calibrate", "h.json", "--report", "r.json"],
                     ["--write", "o.json", "--report", "r.json"],
                     ["--calibrate", "h.json", "--write", "o.json"]):
            with contextlib.redirect_stderr(io.StringIO()) as err, \
                    self.assertRaises(SystemExit) as exit:
                report.main(["trace-ops", "--trace", "t.json"] + argv)
            self.assertEqual(exit.exception.code, 2)
            self.assertIn("--calibrate needs --write and --report",
                          err.getvalue())


if __name__ == "__main__":
    unittest.main()
