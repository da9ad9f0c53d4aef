#!/usr/bin/env python3
"""Benchmark (not a test): forward tokens/s of tpc-run against PyTorch.

The same GPT-2 (hidden 512, 4 layers, 8 heads, vocabulary 50257, seq 256) is
run by tpc-run (one OpenBLAS thread) and by PyTorch (torch.set_num_threads(1))
in the same invocation, on one core each, in alternating rounds (the machine
is noisy: alternating spreads the noise over both sides); each side's figure
is the median over all its timed passes, and the figure to quote is the ratio.
Forward pass and loss, fp32, no dropout.

    /usr/bin/python3 bench/forward_throughput.py [--bin-dir build/bin] [--batch 4] [--steps 5]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import tpc_torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--config", default=os.path.join(ROOT, "bench", "configs",
                                                         "gpt2-h512.json"))
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--steps", type=int, default=3,
                        help="timed forward passes per side and round (after one warm-up)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="alternating rounds of tpc-run and PyTorch")
    args = parser.parse_args()
    tokens = args.batch * args.seq

    torch.set_num_threads(1)
    config = tpc_torch.load_config(args.config)
    weights = tpc_torch.random_weights(config, seed=1)
    batch = tpc_torch.random_batch(config, args.batch, args.seq, seed=1)
    tpc_rates, torch_rates = [], []
    with tempfile.TemporaryDirectory() as work:
        mlir = os.path.join(work, "model.mlir")
        tpcx = os.path.join(work, "model.tpcx")
        tool = lambda name: os.path.join(args.bin_dir, name)  # noqa: E731
        subprocess.run([tool("tpc-import"), args.config, "-o", mlir, "--batch",
                        str(args.batch), "--seq", str(args.seq), "--dropout", "0"],
                       check=True)
        subprocess.run([tool("tpc-compile"), mlir, "-o", tpcx], check=True,
                       stderr=subprocess.DEVNULL)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        for _ in range(args.rounds):
            out = subprocess.run([tool("tpc-run"), tpcx, "--init-seed", "1",
                                  "--synthetic-seed", "1", "--steps", str(args.steps + 1)],
                                 check=True, env=env, stdout=subprocess.PIPE,
                                 text=True).stdout
            rates = [float(m) for m in re.findall(r"tokens_per_s (\S+)", out)][1:]
            if not rates:
                sys.exit("tpc-run printed no tokens_per_s")
            tpc_rates += rates
            with torch.no_grad():
                for step in range(args.steps + 1):
                    start = time.perf_counter()
                    logits = tpc_torch.forward(config, weights, batch["input_ids"])
                    tpc_torch.loss_of(logits, batch["labels"])
                    if step > 0:
                        torch_rates.append(tokens / (time.perf_counter() - start))
    tpc_rate = statistics.median(tpc_rates)
    torch_rate = statistics.median(torch_rates)

    print("model: gpt2 hidden %d, %d layers, %d heads, vocab %d, seq %d, batch %d; "
          "one core each, fp32, forward + loss"
          % (config.hidden, config.layers, config.heads, config.vocab, args.seq,
             args.batch))
    print("tpc-run  forward tokens/s %10.1f  (median of %d passes)" % (tpc_rate, len(tpc_rates)))
    print("pytorch  forward tokens/s %10.1f  (median of %d passes, torch %s)"
          % (torch_rate, len(torch_rates), torch.__version__))
    print("ratio tpc-run / pytorch   %10.3f" % (tpc_rate / torch_rate))


if __name__ == "__main__":
    main()
