#!/usr/bin/env python3
"""tpc-plan's closed forms against the compiled plan on random plans.

benchmarks/plan-memory.py checks a table of chosen plans; this script draws
plans at random (a seeded generator: the same plans on any machine) over
four models (GPT-2 1.7B and 39.1B, Llama 8B, and a Llama whose sizes share
no factor: hidden 3072, 24 heads, 6 kv heads, 20 layers, vocabulary 32003),
tensor, pipeline and data parallelism, microbatch size and count, every
schedule, recomputation, sequence parallelism, fused or unfused attention
and bf16 or fp32, and prints for each the closed-form peak (with the
schedule's real in-flight counts, and as the search computes it) and step
(replayed on the schedule's action lists, and the search's) against the
compile's planned peak and replayed step (`tpc-plan --compare PLAN
--check-plan compared`), then the largest errors. Plans tpc-plan refuses
(heads not divisible by tp, layers by pp·v, ...) are drawn again. Nothing
is timed: both sides are arithmetic on shapes.

    benchmarks/plan-sweep.py [--bin build/bin] [--hardware h200]
                             [--plans N] [--seed S] [--max-error PCT]

With --max-error it exits 1 when any error (memory or step, closed form or
searched) passes PCT either way. The sweep found, on 2026-12-07, closed
forms 49% under a GPipe plan's peak, 12% off with one microbatch, 11% under
full recomputation with unfused attention and 15% under it with sequence
parallelism, and a ZB-H1 step 11% over (docs/design/cost-model.md).
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The model configurations of plan-memory.py (one definition of each).
_spec = importlib.util.spec_from_file_location(
    "plan_memory", os.path.join(ROOT, "benchmarks", "plan-memory.py"))
plan_memory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plan_memory)

# (label, config, seq)
MODELS = [
    ("gpt 1.7B", plan_memory.gpt(2304, 24, 24), 2048),
    ("llama 8B", plan_memory.llama(4096, 32, 8, 14336, 32), 4096),
    ("gpt 39.1B", plan_memory.gpt(8192, 64, 48), 2048),
    ("llama odd", plan_memory.llama(3072, 24, 6, 8192, 20, vocab=32003),
     2048),
]
SCHEDULES = ["1f1b", "gpipe", "zb-h1", "interleaved-1f1b", "zb-v"]


def draw(rng):
    """One random plan: (model index, plan string, gpus, global batch,
    attention, dtype)."""
    model = rng.randrange(len(MODELS))
    tp, pp, dp = (rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]),
                  rng.choice([1, 2, 4]))
    b, m = rng.choice([1, 2, 4]), rng.choice([1, 2, 4, 8, 16])
    schedule = rng.choice(SCHEDULES) if pp > 1 else "1f1b"
    v = 1
    if schedule == "interleaved-1f1b":
        v = rng.choice([2, 3])
        m = max(pp, m - m % pp)
    elif schedule == "zb-v":
        v = 2
    remat = rng.choice(["none", "selective", "full"])
    sp = tp > 1 and rng.random() < 0.5
    attention = rng.choice(["fused", "unfused"])
    dtype = rng.choice(["bf16", "bf16", "fp32"])
    plan = (f"tp={tp},pp={pp},b={b},v={v},schedule={schedule},remat={remat}"
            + (",sp" if sp else ""))
    return model, plan, tp * pp * dp, dp * b * m, attention, dtype


def check(args, work, model, plan, gpus, batch, attention, dtype):
    """tpc-plan's check of one plan: its report's "check" section, or None
    where tpc-plan refuses the plan."""
    label, config, seq = MODELS[model]
    path = os.path.join(work, "model.json")
    with open(path, "w") as f:
        json.dump(config, f)
    report = os.path.join(work, "plan.json")
    done = subprocess.run(
        [os.path.join(args.bin, "tpc-plan"), path, "--gpus", str(gpus),
         "--hardware", args.hardware, "--global-batch", str(batch), "--seq",
         str(seq), "--attention", attention, "--dtype", dtype,
         "--memory-limit", "10000GB", "--top", "1", "--compare", plan,
         "--check-plan", "compared", "--report", report],
        capture_output=True, text=True)
    if done.returncode != 0:
        return None
    with open(report) as f:
        return json.load(f)["check"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--hardware", default="h200",
                        help="tpc-plan's --hardware (default h200)")
    parser.add_argument("--plans", type=int, default=40,
                        help="plans to check (default 40)")
    parser.add_argument("--seed", type=int, default=1,
                        help="the generator's seed (default 1)")
    parser.add_argument("--max-error", type=float)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="plan-sweep.")
    print(f"{'model':<10} {'plan':<58} {'gpus':>4} {'batch':>5} "
          f"{'attention':<9} {'dtype':<5} {'memory':>7} {'searched':>8} "
          f"{'step':>7} {'searched':>8}")
    worst = (0.0, None)
    checked = draws = 0
    while checked < args.plans:
        draws += 1
        if draws > 20 * args.plans:
            sys.exit(f"plan-sweep: only {checked} of {draws} plans drawn "
                     "were accepted")
        model, plan, gpus, batch, attention, dtype = draw(rng)
        result = check(args, work, model, plan, gpus, batch, attention,
                       dtype)
        if result is None:
            continue
        checked += 1
        errors = [
            result["closed_form_peak_bytes"] / result["compiled_peak_bytes"],
            result["searched_peak_bytes"] / result["compiled_peak_bytes"],
            result["closed_form_step_time_s"] /
            result["compiled_step_time_s"],
            result["searched_step_time_s"] / result["compiled_step_time_s"],
        ]
        errors = [100 * (e - 1) for e in errors]
        line = (f"{MODELS[model][0]:<10} {plan:<58} {gpus:>4} {batch:>5} "
                f"{attention:<9} {dtype:<5} " +
                " ".join(f"{e:>+7.1f}%" for e in errors))
        print(line, flush=True)
        largest = max(abs(e) for e in errors)
        if largest > worst[0]:
            worst = (largest, line)
    print(f"largest |error| of {checked} plans: {worst[0]:.1f}%")
    if worst[1]:
        print(f"  {worst[1]}")
    if args.max_error is not None and worst[0] > args.max_error:
        sys.exit(1)


if __name__ == "__main__":
    main()
