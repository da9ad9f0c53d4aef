#!/usr/bin/env python3
"""Benchmark (not a test): CPU training step time at tp=1 and tp=2 on 2 ranks.

One GPT-2 training step (AdamW, fp32, no dropout) compiled three ways and run
in alternating rounds in one invocation (the machine is noisy: alternating
spreads the noise over all of them):
  - 1 rank, no mesh (the single-device reference);
  - 2 ranks, --mesh dp=2 (tp=1: data parallelism, each rank half the batch);
  - 2 ranks, --mesh tp=2 (Megatron tensor parallelism, each rank half of
    every matmul, two all-reduces per layer forward and backward).
Each rank uses one OpenBLAS thread. A configuration's figure is the median
step time (from tpc-run's tokens_per_s lines, after a warm-up step); the
figures to quote are the ratios to the 1-rank step.

    /usr/bin/python3 bench/dist_step.py [--bin-dir build/bin] [--batch 8] [--seq 128]
"""

import argparse
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEP = re.compile(r"^step (\d+) loss \S+ grad_norm \S+ lr \S+ tokens_per_s (\S+)",
                  re.MULTILINE)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--config", default=os.path.join(ROOT, "bench", "configs",
                                                         "gpt2-h512.json"))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=4,
                        help="steps per run; the first is a warm-up")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    tokens = args.batch * args.seq
    tool = lambda name: os.path.join(args.bin_dir, name)  # noqa: E731
    configs = [("1 rank", [], 1), ("2 ranks dp=2 (tp=1)", ["--mesh", "dp=2"], 2),
               ("2 ranks tp=2", ["--mesh", "tp=2"], 2)]
    times = {name: [] for name, _, _ in configs}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as work:
        mlir = os.path.join(work, "model.mlir")
        subprocess.run([tool("tpc-import"), args.config, "-o", mlir, "--batch",
                        str(args.batch), "--seq", str(args.seq), "--dropout", "0"],
                       check=True)
        executables = {}
        for name, mesh, ranks in configs:
            tpcx = os.path.join(work, "m%d.tpcx" % len(executables))
            subprocess.run([tool("tpc-compile"), mlir, "-o", tpcx, "--train"] + mesh,
                           check=True, stderr=subprocess.DEVNULL)
            executables[name] = (tpcx, ranks)
        for _ in range(args.rounds):
            for name, (tpcx, ranks) in executables.items():
                cmd = [tool("tpc-run"), tpcx, "--init-seed", "1", "--synthetic-seed", "1",
                       "--steps", str(args.steps)]
                if ranks > 1:
                    cmd += ["--ranks", str(ranks)]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                                     env=env).stdout
                rates = [float(rate) for k, rate in STEP.findall(out) if int(k) > 1]
                times[name] += [tokens / rate for rate in rates]
    base = statistics.median(times["1 rank"])
    print("GPT-2 %s, batch %d, seq %d, AdamW fp32, %d timed steps per configuration"
          % (os.path.basename(args.config), args.batch, args.seq,
             len(times["1 rank"])))
    for name, _, _ in configs:
        median = statistics.median(times[name])
        print("%-22s step %.3f s  (%.2fx the 1-rank step time, speed-up %.2f)"
              % (name, median, median / base, base / median))


if __name__ == "__main__":
    main()
