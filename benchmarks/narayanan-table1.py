#!/usr/bin/env python3
"""Usage: benchmarks/narayanan-table1.py [BIN_DIR] [HARDWARE]

The cost model against Narayanan et al. 2021 ("Efficient Large-Scale Language
Model Training on GPU Clusters Using Megatron-LM"), Table 1: ten GPT models
(1.7B .. 1T parameters) on 32 .. 3072 A100s with their tensor and pipeline
sizes and batch sizes, full recomputation, V = 51200, s = 2048.

The rule for what Table 1 omits, written before any run: microbatch size 1,
no virtual stages (plain 1F1B), Megatron-2021's unfused attention, no
sequence parallelism (it came in 2022), bf16 with fp32 master weights and
AdamW.

Each configuration is compiled by tpc-compile (--report --hardware: the plan's
real per-rank action lists replayed with each kernel's cost), and its per-GPU
TFLOP/s is counted as the paper counts it (eq. 3:
96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) per iteration, over the predicted step
time and the GPUs). The efficiency parameters are those of
hardware/a100.json, set from microbenchmarks and published measurements alone
(no fitting to this table): all ten are predictions; the five smallest and
five largest are reported apart as the issue asks.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/bin"
HW = sys.argv[2] if len(sys.argv) > 2 else "a100"

# params (B), heads, hidden, layers, tp, pp, GPUs, batch, published TFLOP/s
TABLE1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
V, S = 51200, 2048


def eq3(B, l, h):
    return 96 * B * S * l * h * h * (1 + S / (6 * h) + V / (16 * l * h))


def main():
    work = tempfile.mkdtemp(prefix="table1.")
    rows = []
    print(f"{'params':>8} {'GPUs':>5} {'tp':>2} {'pp':>3} {'dp':>3} {'m':>4} "
          f"{'published':>9} {'predicted':>9} {'error':>7} {'step_s':>8} "
          f"{'bubble':>6} {'compile_s':>9}")
    for params, heads, h, l, tp, pp, gpus, B, published in TABLE1:
        dp = gpus // (tp * pp)
        m = B // dp
        config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
                  "vocab_size": V, "n_positions": S, "n_embd": h,
                  "n_layer": l, "n_head": heads,
                  "activation_function": "gelu_new", "resid_pdrop": 0.1,
                  "embd_pdrop": 0.1, "attn_pdrop": 0.1,
                  "layer_norm_epsilon": 1e-5, "initializer_range": 0.02}
        name = os.path.join(work, f"gpt{params}")
        with open(name + ".json", "w") as f:
            json.dump(config, f)
        subprocess.run([f"{BIN}/tpc-import", name + ".json", "--batch",
                        str(B), "--seq", str(S), "--dtype", "bf16",
                        "--attention", "unfused", "-o", name + ".mlir"],
                       check=True, stderr=subprocess.DEVNULL)
        flags = ["--train", "--mesh", f"dp={dp},pp={pp},tp={tp}",
                 "--microbatches", str(m), "--remat", "full",
                 "--report", name + ".report.json", "--hardware", HW]
        if pp > 1:
            flags += ["--schedule", "1f1b"]
        start = time.time()
        done = subprocess.run([f"{BIN}/tpc-compile", name + ".mlir"] + flags,
                              capture_output=True, text=True)
        took = time.time() - start
        if done.returncode != 0:
            print(f"{params:>7}B compile failed: {done.stderr.strip()}")
            continue
        with open(name + ".report.json") as f:
            report = json.load(f)
        step = report["predicted"]["step_time_s"]
        predicted = eq3(B, l, h) / step / gpus / 1e12
        error = predicted / published - 1
        rows.append((params, error))
        print(f"{params:>7}B {gpus:>5} {tp:>2} {pp:>3} {dp:>3} {m:>4} "
              f"{published:>9} {predicted:>9.1f} {100 * error:>+6.1f}% "
              f"{step:>8.2f} {report['predicted']['bubble_fraction']:>6.3f} "
              f"{took:>9.1f}")
    for label, part in (("five smallest", rows[:5]), ("five largest", rows[5:]),
                        ("all ten", rows)):
        if part:
            errors = [abs(e) for _, e in part]
            print(f"{label}: mean |error| {100 * sum(errors) / len(errors):.1f}%"
                  f", largest {100 * max(errors):.1f}%")

    # tpc-plan on the same models and GPU counts, within 80 GB: the published
    # plan's rank and closed-form prediction beside the best's, and where
    # the gain comes from.
    print()
    print("tpc-plan, within 80 GB (closed forms, the best replayed on its "
          "action lists; the published plan as --compare):")
    for params, heads, h, l, tp, pp, gpus, B, published in TABLE1:
        name = os.path.join(work, f"gpt{params}")
        start = time.time()
        done = subprocess.run(
            [f"{BIN}/tpc-plan", name + ".json", "--gpus", str(gpus),
             "--hardware", HW, "--global-batch", str(B), "--seq", str(S),
             "--attention", "unfused", "--memory-limit", "80GB", "--top", "1",
             "--check-layers", "0", "--compare",
             f"tp={tp},pp={pp},b=1,v=1,schedule=1f1b,remat=full"],
            capture_output=True, text=True)
        took = time.time() - start
        if done.returncode != 0:
            print(f"{params:>7}B tpc-plan failed: {done.stderr.strip()}")
            continue
        lines = done.stdout.splitlines()
        best = next(x for x in lines if x.startswith("1 "))
        cmp_line = next(x for x in lines if x.startswith("compared plan"))
        rank = re.search(r"rank (\d+) of (\d+)", cmp_line)
        ratio = re.search(r"throughput ([0-9.]+)", cmp_line).group(1)
        fits = "does not fit" not in cmp_line
        gains = [re.sub(r"\s+", " ", x.strip()) for x in lines
                 if x.startswith("  + ")]
        print(f"{params:>7}B on {gpus}: published plan rank {rank.group(1)} of "
              f"{rank.group(2)}{'' if fits else ' (over 80 GB)'}; best/published "
              f"{ratio}x; best: {' '.join(best.split()[1:10])}; {took:.1f} s")
        for gain in gains:
            print(f"          {gain}")


if __name__ == "__main__":
    main()
