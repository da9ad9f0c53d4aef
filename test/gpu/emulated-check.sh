#!/usr/bin/env bash
# test/gpu/emulated-check.sh BUILD WORK STAGE: one of device-check.sh's
# stages on this machine, with --device cuda served by the CUDA backend
# compiled for the host, BUILD/lib/libtpcrt-cuda-emulated.so
# (runtime/test/emulation/README.md): the device, launchers and kernels as
# written, emulated on the CPU, and NCCL between ranks emulated through
# files under WORK. Not a GPU run. STAGE:
#   models  two training steps of the tiny GPT-2 and Llama, fp32 and bf16,
#           CPU against the emulated device (ctest runtime.CudaEmulatedModels)
#   ranks   the same on 2 and 4 ranks (the list in device-check.sh's
#           stage_ranks), one emulated device per rank (ctest
#           runtime.CudaEmulatedRanks)
#   resources  runs of one step and of two, of tiny models on 1, 2 and 4
#           ranks: each emulated CUDA and NCCL call that makes or frees a
#           resource (memory, streams, events, cuBLASLt plans,
#           communicators) logged (TPCRT_EMULATION_RESOURCE_LOG): the same
#           calls either way, so none per step (ctest
#           runtime.CudaEmulatedResources)
#   allocations  three steps of each multi-rank model of the ranks stage,
#           host operator new counted around each on every rank
#           (tpcrt-cuda-step-allocations): none in steps 2 and 3 (ctest
#           runtime.CudaEmulatedStepAllocations)
#   bench   the bench stage's training step and its profile (6c, 6f) on
#           the tiny bf16 GPT-2 instead of the MFU model, then report.py
#           merge: every line and field they make (ctest
#           runtime.CudaEmulatedBenchStep); the times mean nothing here
# The models are compiled by BUILD/bin's tpc-import/tpc-compile into
# WORK/models (test/gpu/models.sh).
set -euo pipefail
source "$(dirname "$0")/emulated-setup.sh" "$1" "$2"
stage=$3
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models"
export TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl TPC_GPU_RANKS=4 TPC_GPU_RUN_TIMEOUT=120 \
  TPC_GPU_CARRY=$work TPC_GPU_BUILD=$build TPC_GPU_WORK=$work/dumps \
  TPC_GPU_DUT=cuda OUT=$work/out
mkdir -p "$OUT"
check=$root/test/gpu/device-check.sh
# The models and ranks stages' line on the device's memory in use after the
# first step and after the last: the emulated cudaMemGetInfo counts the
# runtime's cudaMalloc alone, the same after every step.
in_use_said() {
  grep -q 'device memory in use after step 1 = after the last step (driver): yes'     "$OUT/summary.txt" || {
    echo "the $stage stage's summary lacks the memory-in-use line, or it says no:"
    cat "$OUT/summary.txt"
    exit 1
  }
}
if [ "$stage" = ranks ]; then
  bash "$check" --stage ranks
  in_use_said
  # The device issues a run of all_reduces (rt-bucket-reductions) as one
  # NCCL group: the data-parallel gradients of tiny GPT-2 on 2 ranks go out
  # in groups of several all_reduces, not one by one.
  # The trace a file per rank (the launcher's one stderr would cut and
  # interleave the ranks' lines).
  mkdir -p "$work/dp2-trace"
  TPCRT_NCCL_EMULATION_TRACE=$work/dp2-trace "$build/bin/tpc-run" \
    "$work/models/gpt2-tiny-dp2.tpcx" --ranks 2 --device cuda --init-seed 7 \
    --synthetic-seed 7 --steps 1 --timeout 120 >"$work/dp2-run.txt" 2>&1
  groups=$(cat "$work"/dp2-trace/nccl-trace-*.txt |
    grep -c 'rank 0: a group of [0-9]*: all_reduce .*; all_reduce' || true)
  reductions=$(cat "$work"/dp2-trace/nccl-trace-*.txt |
    grep -c 'rank 0 of .*: done all_reduce' || true)
  echo "gpt2-tiny-dp2, rank 0: $reductions all_reduces, $groups groups of several"
  [ "$groups" -ge 1 ] || { echo "no group of all_reduces"; exit 1; }
  exit 0
fi
if [ "$stage" = resources ]; then
  # The device makes its memory, streams, events, cuBLASLt plans and
  # communicators at prepare: a run of two steps makes exactly the calls
  # of a run of one (each counted by name), and some.
  failed=0
  while read -r name ranks _; do
    for steps in 1 2; do
      calls=$work/calls-$name-$steps
      mkdir -p "$calls"
      TPCRT_EMULATION_RESOURCE_LOG=$calls "$build/bin/tpc-run" \
        "$work/models/$name.tpcx" --ranks "$ranks" --device cuda \
        --init-seed 7 --synthetic-seed 7 --steps "$steps" --timeout 120 \
        >"$work/$name-$steps.log" 2>&1 </dev/null || {
        echo "$name: tpc-run --steps $steps failed:"
        tail -5 "$work/$name-$steps.log"
        exit 1
      }
      cat "$calls"/resource-calls-*.txt 2>/dev/null | sort | uniq -c |
        awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1}' \
        >"$work/$name-$steps.calls"
    done
    one=$(cat "$work/$name-1.calls") two=$(cat "$work/$name-2.calls")
    if [ -z "$one" ]; then
      echo "$name: no resource call logged (TPCRT_EMULATION_RESOURCE_LOG)"
      failed=1
    elif [ "$one" != "$two" ]; then
      echo "$name on $ranks ranks, 1 step: $one"
      echo "$name on $ranks ranks, 2 steps: $two (calls per step)"
      failed=1
    else
      echo "$name on $ranks ranks: 1 step and 2 make the same calls: $one"
    fi
  done <<'EOF'
gpt2-tiny 1
llama-tiny-bf16 1
gpt2-tiny-dp2 2
gpt2-tiny-tp2-sp 2
gpt2-tiny-pp2-zbh1 2
gpt2-tiny-dp2-pp2 4
EOF
  exit $failed
fi
if [ "$stage" = allocations ]; then
  # The ranks stage's models: their collectives (grouped all-reduces, bf16
  # reductions, all-gather / reduce-scatter), started transfers (1F1B,
  # ZB-H1) and 4-rank meshes, with NCCL's group lists and the waits on
  # in-flight operations in every step.
  counter=$(find "$build" -maxdepth 2 -type f -name tpcrt-cuda-step-allocations | head -n 1)
  [ -n "$counter" ] || { echo "no tpcrt-cuda-step-allocations in $build"; exit 1; }
  command -v mpiexec >/dev/null || { echo "no mpiexec: skipped"; exit 77; }
  failed=0
  while read -r name ranks _; do
    if ! timeout 120 mpiexec --allow-run-as-root --oversubscribe -n "$ranks" \
      -x OPENBLAS_NUM_THREADS=1 "$counter" "$work/models/$name.tpcx" \
      >"$work/$name-allocations.log" 2>&1 </dev/null; then
      echo "$name on $ranks ranks:"
      grep -v '^ \|^--\|^$' "$work/$name-allocations.log" | head -n 20
      failed=1
    else
      grep 'allocate nothing' "$work/$name-allocations.log" | sort
    fi
  done <"$work/models/ranks.txt" # models.sh's list
  exit $failed
fi
if [ "$stage" = models ]; then
  bash "$check" --stage models
  in_use_said
  exit 0
fi
if [ "$stage" != bench ]; then
  exec bash "$check" --stage "$stage"
fi
export TPC_GPU_STEP_MODEL=gpt2-tiny-bf16 \
  TPC_GPU_STEP_DIMS="--batch 4 --seq 32 --hidden 64 --layers 2 --vocab 256"
bash "$check" --stage bench-gpt-tpc
bash "$check" --stage profile-gpt-tpc
merged=$(python3 "$root/benchmarks/cuda/report.py" merge \
  --json "$work/bench.json" <"$work/dumps/gpt-tpc.jsonl")
echo "$merged"
python3 - "$work/dumps/gpt-tpc.jsonl" "$work/dumps/gpt-profile.txt" \
  "$merged" <<'EOF'
import json, sys
step = json.loads(open(sys.argv[1]).read())
want = ["step_ms", "mfu", "peak_bytes", "planned_peak_bytes", "device_bytes",
        "predicted_step_ms", "predicted_mfu", "predicted_peak_bytes",
        "in_use_before_steps", "in_use_after_step_1", "in_use_after_last_step"]
missing = [k for k in want if k not in step]
assert not missing, f"gpt-tpc.jsonl lacks {missing}: {step}"
# The plan's numbers: the interpreter's peak is the plan's and the report's.
assert step["peak_bytes"] == step["planned_peak_bytes"] == \
    step["predicted_peak_bytes"], step
assert step["device_bytes"] > step["planned_peak_bytes"], step
# The emulated driver counts the one cudaMalloc alone: device_bytes, before
# the 4 steps and after each.
assert step["in_use_before_steps"] == step["in_use_after_step_1"] == \
    step["in_use_after_last_step"] == step["device_bytes"], step
assert step["in_use_last_step"] == 4, step
profile = open(sys.argv[2]).read().splitlines()
assert profile[0].startswith("step 2 by opcode"), profile[0]
# Timed by the device's events: its fused groups and batches as untimed.
assert "on the device's compute stream" in profile[0], profile[0]
assert profile[1].startswith("TFLOP/s from the model's dimensions: linear"), \
    profile[1]
# Beside the compile's replay for the same executable (the h200 report).
assert profile[2].startswith("measured/predicted (tpc-compile --hardware "
                             "h200-141gb-sxm): kernels "), profile[2]
assert profile[3].split()[-2:] == ["predicted", "meas/pred"], profile[3]
end = next(i for i, line in enumerate(profile) if line.startswith("the "))
# (then 6f's calibration: what it fitted, what it left, the file.)
rows = [line for line in profile[4:end]
        if not line.startswith(("in the trace", "calibrated ",
                                "left as they were", "wrote "))]
# kind calls ms share% predicted ratio: a kind may hold a space ("cast batch").
shares = [float(line.split()[-3].rstrip("%")) for line in rows]
# Each share is printed to 0.1%: off by 0.05 at most.
assert abs(sum(shares) - 100) <= 0.05 * len(shares) + 1e-9, shares
# The device's fused groups and batches, timed on the runs that launch
# them, are the replay's kinds by kernel index: each has its prediction.
kinds = {line.rsplit(None, 5)[0]: line.split()[-2] for line in rows}
fused = [k for k in kinds if "+" in k or k.endswith(" batch")]
assert "apply_mask+add+layer_norm" in fused and "cast batch" in fused, kinds
assert all(kinds[k] != "-" for k in fused), kinds
# Only copies onto their own bytes are charged nothing by the replay, and
# every kind it charges ran.
assert [k for k, guess in kinds.items() if guess == "-"] == ["copy"], kinds
assert not any(line.startswith("predicted, not in the trace")
               for line in profile), profile
merged = sys.argv[3]
for text in ("GPT-2 step (h 64", "GPT-2 step memory: tpc device memory",
             "GPT-2 step predicted by tpc-compile --hardware h200-141gb-sxm",
             "after step 4: nothing allocated after step 1"):
    assert text in merged, f"no '{text}' in the merged report"
print("bench stage lines and fields: ok")
EOF
# 6f's calibration (the stage's own fits nothing here: on h200.json every
# kernel of the tiny model is launch-bound, which the profile says): the
# same executable compiled under h200.json with kernel launches free,
# report.py trace-ops --calibrate on the stage's trace fits its kinds; the
# description it writes is one the compiler reads, and the executable
# compiled under it is predicted at the time the trace measured for each
# kind it fitted (to its 4 digits and the launches an optimizer batch does
# not make: 2%).
grep -q '^calibrated from step 2 .*: none$' "$work/dumps/gpt-profile.txt"
grep -q '^left as they were: .*layer_norm (launch-bound)' \
  "$work/dumps/gpt-profile.txt"
python3 "$root/test/Compile/Inputs/with-kinds.py" "$root/hardware/h200.json" \
  "$work/free-launch.json" cuda
"$build/bin/tpc-import" "$work/models/gpt2-tiny.json" --batch 4 --seq 32 \
  --dtype bf16 -o "$work/recompiled.mlir"
# recompile NAME: the model as models.sh compiles gpt2-tiny-bf16 (the same
# executable), its report under the description $work/NAME.json.
recompile() {
  "$build/bin/tpc-compile" "$work/recompiled.mlir" --train --optimizer adamw \
    --lr 1e-3 --seed 5 --hardware "$work/$1.json" \
    --report "$work/$1.report.json" -o "$work/recompiled.tpcx" 2>/dev/null
  cmp "$work/recompiled.tpcx" "$work/models/gpt2-tiny-bf16.tpcx"
}
recompile free-launch
python3 "$root/benchmarks/cuda/report.py" trace-ops \
  --trace "$work/dumps/gpt-trace.json" \
  --report "$work/free-launch.report.json" --top 0 \
  --calibrate "$work/free-launch.json" --write "$work/calibrated.json" \
  >"$work/calibrating.txt"
recompile calibrated
python3 "$root/benchmarks/cuda/report.py" trace-ops \
  --trace "$work/dumps/gpt-trace.json" \
  --report "$work/calibrated.report.json" --top 0 >"$work/recalibrated.txt"
python3 - "$work/calibrating.txt" "$work/recalibrated.txt" <<'EOF2'
import re, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("calibrated from"))
fitted = re.findall(r"([a-z_+,]+(?: batch)?) [0-9.e+-]+ -> [0-9.e+-]+ \(",
                    line.split("): ", 1)[1])
assert len(fitted) >= 5, line
assert "apply_mask+add+layer_norm" in fitted and "cast batch" in fitted, line
rows = {l.rsplit(None, 5)[0]: l.split()[-1]
        for l in open(sys.argv[2]).read().splitlines()[3:]
        if len(l.split()) >= 6 and not l.startswith("the ")}
off = {k: rows.get(k) for k in fitted
       if rows.get(k) in (None, "-") or abs(float(rows[k]) - 1) > 0.02}
assert not off, f"calibrated kinds not at measured/predicted 1: {off}"
print(f"calibrated description: {len(fitted)} kinds at measured/predicted "
      "1 on recompiling: ok")
EOF2
