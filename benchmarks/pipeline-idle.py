#!/usr/bin/env python3
"""Idle time of the pipeline schedules on CPU ranks, measured and predicted.

Usage: benchmarks/pipeline-idle.py [--bin build/bin] [--out DIR] [--steps K (default 11)]
                                   [--microbatches M] [--layers L] [--hidden H]
                                   [--transfers async|blocking|both]

Compiles one GPT-2 training step for two pipeline ranks (`--mesh pp=2`) under
each schedule (gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v), runs K steps on
two CPU ranks with `tpc-run --ranks 2 --trace`, and prints per stage:

- the step time and the measured idle fraction: the time its kernels spend
  blocked in point-to-point transfers and collectives (send, recv, their
  starts and waits, all_reduce, ...), from the trace, over the step time;
- T_F, T_B, T_W: the time of one microbatch's forward, input-gradient and
  weight-gradient kernels on one chunk, measured in the same run (the
  kernels' phase comes from `tpc-compile --emit mlir`, which marks each
  pipeline kernel with its chunk's F, B or W), on each stage;
- the idle fraction the schedule's formula predicts from those T's (the
  formulas assume equal stages: the slower stage's T's, which give the larger
  bubble), and the ratio measured / predicted:
    gpipe, 1f1b        (p-1)(T_F+T_B+T_W) over the step
    interleaved-1f1b   (p-1)(T_F+T_B+T_W) with one chunk's T's (1/v of a stage)
    zb-h1              (p-1)(T_F+T_B-T_W)
    zb-v               (p-1)(T_F+T_B-2T_W) with one chunk's T's, at least 0
                       (Qi et al. 2023: no bubble when T_F = T_B = T_W)

Each schedule runs with asynchronous transfers (tpc-compile's default) and,
with --transfers both (the default) or blocking, again with
--blocking-transfers ("1f1b blocking"), side by side.

The formulas assume stages of equal speed. Two CPU cores are not (the same
GEMMs ran ~8% slower on one core than on the other in one run): a faster
stage also waits, every step, for the time the slowest stage computes longer
(all stages take the same step time). So each stage is printed again beside
the formula plus that difference, the busy time (step minus blocked) of the
slowest stage minus its own: the `+slower` and `ratio'` columns (for the
slowest stage they are the formula and its ratio).

The first step is a warm-up and is left out. Two ranks on two cores: one core
each (OPENBLAS_NUM_THREADS=1), so that waiting is waiting, not sharing.
Standard library only.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

SCHEDULES = ["gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-v"]
BLOCKING = {"send", "recv", "send_start", "recv_start", "wait", "all_reduce",
            "all_gather", "reduce_scatter", "all_to_all"}
KERNEL = re.compile(r"rt\.kernel (\w+)\(.*?\{([^{}]*stage = (\d+) : ui32[^{}]*)\}")
PHASE = re.compile(r'tpc\.phase = "train_([FBW])_chunk(\d+)"')


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(command), result.stdout,
                                       result.stderr))
    return result.stdout


def kernel_phases(rt_mlir):
    """Per kernel of the file, in order: its phase letter or None."""
    phases = []
    for line in rt_mlir.splitlines():
        if "rt.kernel " not in line:
            continue
        match = PHASE.search(line)
        phases.append(match.group(1) if match else None)
    return phases


def measure(trace_path, phases, microbatches, chunks_per_rank):
    """Mean step time, blocked time and per-microbatch-chunk F, B, W (us)."""
    with open(trace_path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    steps = sorted({e["args"]["step"] for e in events})[1:]  # skip warm-up
    if not steps:
        sys.exit("%s: need at least two steps" % trace_path)
    wall = blocked = 0.0
    phase_time = {"F": 0.0, "B": 0.0, "W": 0.0}
    for step in steps:
        mine = [e for e in events if e["args"]["step"] == step]
        wall += max(e["ts"] + e["dur"] for e in mine) - min(e["ts"] for e in mine)
        for e in mine:
            if e["name"] in BLOCKING:
                blocked += e["dur"]
            phase = phases[e["args"]["kernel"]]
            if phase:
                phase_time[phase] += e["dur"]
    n = len(steps)
    per = n * microbatches * chunks_per_rank
    return (wall / n, blocked / n,
            {k: v / per for k, v in phase_time.items()})


def predicted(schedule, p, t):
    if schedule in ("gpipe", "1f1b", "interleaved-1f1b"):
        return (p - 1) * (t["F"] + t["B"] + t["W"])
    if schedule == "zb-h1":
        return (p - 1) * (t["F"] + t["B"] - t["W"])
    return max(0.0, (p - 1) * (t["F"] + t["B"] - 2 * t["W"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", default="build/bin")
    parser.add_argument("--out", default=None)
    parser.add_argument("--steps", type=int, default=11)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--microbatch-size", type=int, default=2)
    # A small vocabulary keeps the LM head (on the last stage) light, so
    # that the stages are equal, as the formulas assume.
    parser.add_argument("--vocab", type=int, default=64)
    parser.add_argument("--transfers", default="both",
                        choices=["async", "blocking", "both"])
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="pipeline-idle.")
    os.makedirs(out, exist_ok=True)
    ranks = 2

    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "vocab_size": args.vocab, "n_positions": args.seq,
              "n_embd": args.hidden, "n_layer": args.layers,
              "n_head": max(1, args.hidden // 64),
              "activation_function": "gelu_new", "resid_pdrop": 0.0,
              "embd_pdrop": 0.0, "attn_pdrop": 0.0,
              "layer_norm_epsilon": 1e-5, "initializer_range": 0.02}
    config_path = os.path.join(out, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    model = os.path.join(out, "model.mlir")
    batch = args.microbatches * args.microbatch_size
    run([os.path.join(args.bin, "tpc-import"), config_path, "--batch",
         str(batch), "--seq", str(args.seq), "-o", model])

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    print("GPT-2 %d layers, hidden %d, seq %d, %d microbatches of %d, p = %d, "
          "%d steps (the first left out)" % (
              args.layers, args.hidden, args.seq, args.microbatches,
              args.microbatch_size, ranks, args.steps))
    print("%-25s %5s %9s %10s %9s %8s %8s %8s %9s %6s %10s %6s" % (
        "schedule", "stage", "step ms", "blocked ms", "idle", "T_F ms",
        "T_B ms", "T_W ms", "formula", "ratio", "+slower ms", "ratio'"))
    modes = {"async": [False], "blocking": [True],
             "both": [False, True]}[args.transfers]
    for schedule, blocking in [(s, b) for s in SCHEDULES for b in modes]:
        v = 2 if schedule in ("interleaved-1f1b", "zb-v") else 1
        flags = ["--train", "--optimizer", "sgd", "--mesh", "pp=%d" % ranks,
                 "--microbatches", str(args.microbatches), "--schedule",
                 schedule] + (["--blocking-transfers"] if blocking else [])
        name = schedule + (" blocking" if blocking else "")
        base = os.path.join(out, schedule + ("-blocking" if blocking else ""))
        rt_mlir = run([os.path.join(args.bin, "tpc-compile"), model,
                       "--emit", "mlir", "-o", "-"] + flags)
        phases = kernel_phases(rt_mlir)
        run([os.path.join(args.bin, "tpc-compile"), model, "-o",
             base + ".tpcx"] + flags)
        run([os.path.join(args.bin, "tpc-run"), base + ".tpcx", "--ranks",
             str(ranks), "--init-seed", "1", "--synthetic-seed", "1",
             "--steps", str(args.steps), "--trace", base + ".trace.json"],
            env=env)
        stages = [measure("%s.trace.%d.json" % (base, r), phases,
                          args.microbatches, v) for r in range(ranks)]
        # The formulas assume equal stages; the slower stage sets the pace,
        # so each is evaluated with the stage whose T's give the larger
        # bubble (the T's printed are each stage's own).
        bubble = max(predicted(schedule, ranks, s[2]) for s in stages)
        busiest = max(wall - blocked for wall, blocked, _ in stages)
        for r, (wall, blocked, t) in enumerate(stages):
            idle = blocked / wall
            formula = bubble / wall
            ratio = "%6.2f" % (idle / formula) if formula > 0 else "   n/a"
            slower = busiest - (wall - blocked)
            balanced = (bubble + slower) / wall
            ratio2 = "%6.2f" % (idle / balanced) if balanced > 0 else "   n/a"
            print("%-25s %5d %9.2f %10.2f %9.3f %8.3f %8.3f %8.3f %9.3f %s "
                  "%10.2f %s" % (
                      name, r, wall / 1e3, blocked / 1e3, idle, t["F"] / 1e3,
                      t["B"] / 1e3, t["W"] / 1e3, formula, ratio,
                      slower / 1e3, ratio2))
    print("files: %s" % out)


if __name__ == "__main__":
    main()
