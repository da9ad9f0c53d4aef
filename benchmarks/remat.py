#!/usr/bin/env python3
"""Activation rematerialization: what each policy costs and saves (issue 14).

Usage: benchmarks/remat.py [--bin build/bin] [--out DIR] [--steps K]

1. From shapes alone (tpc-compile --report): GPT-3 175B (hidden 12288, 96
   heads, seq 2048, bf16, unfused attention, dropout 0.1) on 8-way tensor
   parallelism with sequence parallelism, 8 layers of it (the figures are
   per layer or per microbatch, so the depth only scales them), microbatch
   size 1: per policy the stash of layer 0, the recompute FLOPs over the
   model's (the hardware-FLOP overhead), and the planned peak of one
   device's activations and of the whole device (with 8 layers and no data
   parallelism the weights and AdamW state set the whole peak, at the
   optimizer step, whatever the policy).
2. Measured on this CPU: GPT-2 (8 layers, hidden 256, seq 256, unfused
   attention, dropout 0.1, 4 microbatches of 2) on one device, K steps per
   policy (the first left out): the step time against `none`'s and the
   measured peak (which equals the plan: tpc-run prints both).

3. `auto` from shapes: GPT-3 175B (96 layers) on pp = 8 x tp = 8 with
   sequence parallelism, 1F1B with 8 microbatches of 1 (stage i holds
   8 - i microbatches' stash): per --memory-limit, what auto chose per
   stage, the recompute FLOP overhead and the largest planned peak, beside
   none and selective on every layer, and how long the search took.

Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

POLICIES = ["none", "selective", "block:4", "uniform:2", "full"]


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(command), result.stdout,
                                       result.stderr))
    return result


def write_config(path, config):
    with open(path, "w") as f:
        json.dump(config, f)


def gpt2_config(layers, hidden, heads, vocab, positions):
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
            "vocab_size": vocab, "n_positions": positions, "n_embd": hidden,
            "n_layer": layers, "n_head": heads,
            "activation_function": "gelu_new", "resid_pdrop": 0.1,
            "embd_pdrop": 0.1, "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5,
            "initializer_range": 0.02}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="build/bin")
    parser.add_argument("--out", default=None)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="remat.")
    os.makedirs(out, exist_ok=True)
    tool = lambda name: os.path.join(args.bin, name)

    # 1. GPT-3 175B on tp = 8 with sequence parallelism, from shapes.
    config = os.path.join(out, "gpt3.json")
    write_config(config, gpt2_config(8, 12288, 96, 50257, 2048))
    model = os.path.join(out, "gpt3.mlir")
    run([tool("tpc-import"), config, "--seq", "2048", "--batch", "1",
         "--attention", "unfused", "--dtype", "bf16", "-o", model])
    print("GPT-3 175B layers (h 12288, a 96, s 2048, b 1, bf16, unfused), "
          "tp = 8 + sequence parallelism, one device, from shapes:")
    print("%-10s %16s %16s %10s %16s %14s" % (
        "policy", "stash layer 0 B", "recompute GFLOP", "overhead",
        "activations GB", "peak GB"))
    for policy in POLICIES:
        report = os.path.join(out, "gpt3-%s.json" % policy.replace(":", ""))
        run([tool("tpc-compile"), model, "--train", "--mesh", "tp=8",
             "--sequence-parallel", "--remat", policy, "--report", report])
        with open(report) as f:
            data = json.load(f)
        stage = data["stages"][0]
        flops = stage["flops_per_microbatch"]
        recompute = stage["recompute_flops_per_microbatch"]
        print("%-10s %16d %16.1f %9.1f%% %16.2f %14.2f" % (
            policy, data["per_layer"]["activation_bytes"], recompute / 1e9,
            100.0 * recompute / (flops - recompute),
            stage["peak_activation_bytes"] / 1e9, stage["peak_bytes"] / 1e9))

    # 3. auto on a pipeline, from shapes.
    config = os.path.join(out, "gpt3-96.json")
    write_config(config, gpt2_config(96, 12288, 96, 50257, 2048))
    model96 = os.path.join(out, "gpt3-96.mlir")
    run([tool("tpc-import"), config, "--seq", "2048", "--batch", "8",
         "--attention", "unfused", "--dtype", "bf16", "-o", model96])
    flags = ["--train", "--mesh", "pp=8,tp=8", "--sequence-parallel",
             "--microbatches", "8"]
    print("\nGPT-3 175B (96 layers, bf16, unfused), pp = 8 x tp = 8 + "
          "sequence parallelism, 1F1B, 8 microbatches of 1, from shapes:")
    print("%-22s %10s %12s %10s  %s" % ("policy", "peak GB", "overhead",
                                        "search s", "per stage"))
    rows = [("none", []), ("selective", [])] + [
        ("auto " + limit, ["--memory-limit", limit])
        for limit in ("80GB", "70GB", "60GB")]
    for name, extra in rows:
        policy = "auto" if name.startswith("auto") else name
        report = os.path.join(out, "gpt3-96-%s.json" % name.replace(" ", "-"))
        started = time.monotonic()
        result = subprocess.run(
            [tool("tpc-compile"), model96] + flags + ["--remat", policy,
                                                      "--report", report,
                                                      "-o", report + ".tpcx"]
            + extra, capture_output=True, text=True)
        elapsed = time.monotonic() - started
        if result.returncode != 0:
            print("%-22s %s" % (name, result.stderr.strip().splitlines()[-1]))
            continue
        with open(report) as f:
            stages = json.load(f)["stages"]
        flops = sum(s["flops_per_microbatch"] for s in stages)
        recompute = sum(s["recompute_flops_per_microbatch"] for s in stages)
        chosen = "; ".join(
            "%d: %s" % (i, s["remat"].replace("auto: ", "")
                        .replace(" of 12 layers", ""))
            for i, s in enumerate(stages)) if policy == "auto" else ""
        print("%-22s %10.2f %11.2f%% %10.1f  %s" % (
            name, max(s["peak_bytes"] for s in stages) / 1e9,
            100.0 * recompute / (flops - recompute), elapsed, chosen))

    # 2. A measured CPU run of a small model.
    config = os.path.join(out, "small.json")
    write_config(config, gpt2_config(8, 256, 4, 512, 256))
    model = os.path.join(out, "small.mlir")
    run([tool("tpc-import"), config, "--seq", "256", "--batch", "8",
         "--attention", "unfused", "-o", model])
    print("\nGPT-2 8 layers, hidden 256, seq 256, unfused, 4 microbatches of "
          "2, one device, %d steps (the first left out):" % args.steps)
    print("%-10s %12s %10s %16s %16s" % ("policy", "step ms", "vs none",
                                        "peak bytes", "planned bytes"))
    reference = None
    for policy in POLICIES:
        exe = os.path.join(out, "small-%s.tpcx" % policy.replace(":", ""))
        run([tool("tpc-compile"), model, "--train", "--microbatches", "4",
             "--remat", policy, "-o", exe])
        result = run([tool("tpc-run"), exe, "--init-seed", "1",
                      "--synthetic-seed", "1", "--steps", str(args.steps)])
        text = result.stdout + result.stderr
        rates = [float(x) for x in re.findall(r"tokens_per_s ([0-9.]+)", text)]
        if len(rates) < 2:
            sys.exit("%s: need at least two steps" % policy)
        step_ms = 1e3 * 8 * 256 / (sum(rates[1:]) / len(rates[1:]))
        peak = re.search(r"peak_bytes (\d+) planned_peak_bytes (\d+)", text)
        reference = reference or step_ms
        print("%-10s %12.1f %9.2fx %16s %16s" % (
            policy, step_ms, step_ms / reference, peak.group(1),
            peak.group(2)))
    print("files: %s" % out)


if __name__ == "__main__":
    main()
