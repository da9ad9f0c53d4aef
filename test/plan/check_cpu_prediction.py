#!/usr/bin/env python3
"""Predictions that come true on this machine (issue 16): small plans of one
GPT-2 (1 or 2 ranks) compiled with --report --hardware CPU_JSON (this
machine, measured by tpc-measure-hardware), then run by tpc-run.

- Memory: every rank's measured peak equals the report's predicted peak of
  its stage (the plan's), exactly.
- Time (with --check-order; a measurement, so benchmarks/cpu-prediction.sh
  runs it, not ctest): for every pair of plans whose predicted step times
  differ by at least 15%, the measured order (the median over RUNS runs of
  the mean step time, the first step left out as warm-up) is the predicted
  one.

Prints one line per plan (predicted and measured step time, their ratio, the
peaks) and, with --check-order, one per compared pair; exits 1 on a
mismatch, 77 when a tool it needs is missing (mpiexec) or the hardware file
does not exist.

Usage: check_cpu_prediction.py BIN_DIR CPU_JSON WORK_DIR [RUNS] [--check-order]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

CHECK_ORDER = "--check-order" in sys.argv
ARGS = [a for a in sys.argv[1:] if a != "--check-order"]
BIN, HW, WORK = ARGS[0:3]
RUNS = int(ARGS[3]) if len(ARGS) > 3 else 5
STEPS = 4

if not os.path.exists(HW):
    print(f"skipped: no hardware description at {HW}")
    sys.exit(77)
if shutil.which("mpiexec") is None:
    print("skipped: no mpiexec")
    sys.exit(77)

os.makedirs(WORK, exist_ok=True)
# A device of the CPU description is one core (tpc-measure-hardware measures
# each rank on one thread): a one-rank plan runs on one core too, so that
# plans of 1 and 2 ranks run on the same devices.
os.environ["OPENBLAS_NUM_THREADS"] = "1"
CONFIG = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
          "vocab_size": 2048, "n_positions": 128, "n_embd": 256,
          "n_layer": 4, "n_head": 8, "activation_function": "gelu_new",
          "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
          "layer_norm_epsilon": 1e-5, "initializer_range": 0.02}
config_path = os.path.join(WORK, "config.json")
with open(config_path, "w") as f:
    json.dump(CONFIG, f)

# name: (import flags, compile flags, ranks)
PLANS = {
    "one": ("--batch 8", "", 1),
    "one-mb4": ("--batch 8", "--microbatches 4", 1),
    "one-full": ("--batch 8", "--remat full", 1),
    "one-unfused": ("--batch 8 --attention unfused", "", 1),
    "one-b16": ("--batch 16", "", 1),
    "one-b2": ("--batch 2", "", 1),
    "dp2": ("--batch 8", "--mesh dp=2", 2),
    "tp2": ("--batch 8", "--mesh tp=2", 2),
    "tp2-sp": ("--batch 8", "--mesh tp=2 --sequence-parallel", 2),
    "pp2": ("--batch 8", "--mesh pp=2 --microbatches 4", 2),
}


def run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        print("failed:", " ".join(args))
        print(done.stdout[-2000:], done.stderr[-2000:])
        sys.exit(1)
    return done


results = {}
failures = 0
for name, (import_flags, compile_flags, ranks) in PLANS.items():
    base = os.path.join(WORK, name)
    run([f"{BIN}/tpc-import", config_path, "--seq", "128", "-o",
         base + ".mlir"] + import_flags.split())
    run([f"{BIN}/tpc-compile", base + ".mlir", "--train", "-o",
         base + ".tpcx", "--report", base + ".json", "--hardware", HW]
        + compile_flags.split())
    with open(base + ".json") as f:
        report = json.load(f)
    predicted = report["predicted"]
    stage_peaks = [s["peak_bytes"] for s in predicted["stages"]]
    tokens = int(import_flags.split()[1]) * 128
    means = []
    for _ in range(RUNS):
        done = run([f"{BIN}/tpc-run", base + ".tpcx", "--ranks", str(ranks),
                    "--init-seed", "1", "--synthetic-seed", "2", "--steps",
                    str(STEPS)])
        rates = [float(x) for x in
                 re.findall(r"^step \d+ .*tokens_per_s (\S+)", done.stdout,
                            re.M)]
        steps = [tokens / r for r in rates[1:]]
        means.append(sum(steps) / len(steps))
        # Peaks: rank r is on stage r // (ranks / stages).
        per_stage = ranks // len(stage_peaks)
        for rank, measured, planned in re.findall(
                r"^rank (\d+) peak_bytes (\d+) planned_peak_bytes (\d+)",
                done.stdout, re.M):
            expected = stage_peaks[int(rank) // per_stage]
            if int(measured) != expected:
                print(f"FAIL {name}: rank {rank} measured peak {measured} "
                      f"!= predicted {expected}")
                failures += 1
    measured = statistics.median(means)
    results[name] = (predicted["step_time_s"], measured)
    print(f"{name:12s} ranks {ranks}: predicted {predicted['step_time_s'] * 1e3:8.2f} ms"
          f"  measured {measured * 1e3:8.2f} ms  ratio {measured / predicted['step_time_s']:5.2f}"
          f"  peaks {stage_peaks} (measured equal)")

if not CHECK_ORDER:
    print(f"peaks: every rank's measured peak is its stage's predicted peak; "
          f"{failures} failures")
    sys.exit(1 if failures else 0)
pairs = agree = 0
names = list(results)
for i, a in enumerate(names):
    for b in names[i + 1:]:
        pa, ma = results[a]
        pb, mb = results[b]
        if max(pa, pb) < 1.15 * min(pa, pb):
            continue
        pairs += 1
        same = (pa < pb) == (ma < mb)
        agree += same
        print(f"{'ok  ' if same else 'FAIL'} {a} vs {b}: predicted "
              f"{pb / pa:5.2f}x, measured {mb / ma:5.2f}x")
        failures += not same
print(f"{agree} of {pairs} pairs 15% apart in the predicted order; "
      f"{failures} failures")
sys.exit(1 if failures else 0)
