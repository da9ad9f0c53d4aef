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

`auto` (a policy per layer under --memory-limit) is not implemented yet.
Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

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
