#!/usr/bin/env bash
# test/gpu/emulated-configs.sh BUILD WORK: training configurations the
# device check's models and ranks stages do not run, on the CUDA backend
# compiled for the host (BUILD/lib/libtpcrt-cuda-emulated.so, NCCL emulated
# through files) against the CPU device: full recomputation, SGD with
# momentum, unrolled microbatches, unfused attention (batch_matmul, softmax
# and their gradients), a vocabulary padded for tp = 2 and for --target
# cuda (on one rank and over tp = 2), the interleaved,
# ZB-V and GPipe (blocking transfers) pipelines, tp x pp with sequence
# parallelism under ZB-H1 and under interleaved 1F1B, and dp x tp in bf16
# with bf16 reductions. Two
# steps each from the same weights and batch, compared by device-check.sh's
# own model_pair (test/gpu/model-pair.sh: loss, grad_norm, the first
# gradients and the checkpoint after AdamW; fp32 1e-4, bf16 2e-2). Then a run
# resumed on the device from its checkpoint (one rank, pp = 2): bit for bit
# the uninterrupted run, and its evaluations the CPU's. Not a GPU run.
# (ctest runtime.CudaEmulatedConfigurations)
set -euo pipefail
source "$(dirname "$0")/emulated-setup.sh" "$1" "$2"
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models" >"$work/models.txt" 2>&1
m=$work/models
# Four layers for the pipelines (two chunks a rank), and a vocabulary that
# tp = 2 pads (255).
python3 - "$m" <<'EOF'
import json, sys
m = sys.argv[1]
g = json.load(open(f"{m}/gpt2-tiny.json"))
json.dump(dict(g, n_layer=4), open(f"{m}/gpt2-4l.json", "w"))
json.dump(dict(g, vocab_size=255), open(f"{m}/gpt2-v255.json", "w"))
EOF
export TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl
# model_pair (device-check.sh's comparison) reads these.
BUILD=$build CARRY=$work WORK=$work/dumps DUT=cuda PY=python3
TPC_GPU_RUN_TIMEOUT=120
source "$root/test/gpu/model-pair.sh"

failed=0
# run NAME RANKS TOL CONFIG IMPORT-FLAGS... -- COMPILE-FLAGS...
run() {
  local name=$1 ranks=$2 tol=$3 config=$4 imp=() comp=()
  shift 4
  while [ "$1" != -- ]; do imp+=("$1"); shift; done
  shift
  comp=("$@")
  "$build/bin/tpc-import" "$config" "${imp[@]}" -o "$work/$name.mlir" \
    2>"$work/$name.import.txt" || {
    echo "FAIL $name: tpc-import: $(cat "$work/$name.import.txt")"
    failed=1
    return
  }
  "$build/bin/tpc-compile" "$work/$name.mlir" --train --seed 5 \
    "${comp[@]}" -o "$m/$name.tpcx" 2>"$work/$name.compile.txt" || {
    echo "FAIL $name: tpc-compile: $(cat "$work/$name.compile.txt")"
    failed=1
    return
  }
  if model_pair "$name" "$tol" "$name" "$ranks" >"$work/$name.pair.txt" \
      2>&1 </dev/null; then
    echo "ok   $name ($ranks rank$([ "$ranks" -gt 1 ] && echo s)):" \
      "$(grep '^step 2' "$WORK/$name-dut.txt" | cut -d' ' -f1-6)"
  else
    echo "FAIL $name:"
    grep -v '^step\|^rank\|^tpc-run\|^==\|: ok \|^  step' \
      "$work/$name.pair.txt" || true
    failed=1
  fi
}

gpt2=$m/gpt2-tiny.json llama=$m/llama-tiny.json
gpt2_4l=$m/gpt2-4l.json
run remat-full 1 1e-4 "$gpt2" --batch 4 --seq 32 -- \
  --remat full --microbatches 2
run sgd-momentum 1 1e-4 "$gpt2" --batch 4 --seq 32 -- \
  --optimizer sgd --momentum 0.9 --lr 0.05
run unrolled-3 1 1e-4 "$gpt2" --batch 6 --seq 16 -- \
  --microbatches 3 --unroll-microbatches
run llama-unfused 1 1e-4 "$llama" --batch 2 --seq 24 --attention unfused --
run vocab-255-tp2 2 1e-4 "$m/gpt2-v255.json" --batch 4 --seq 32 -- \
  --mesh tp=2 --grad-clip 0.5
# --target cuda pads the vocabulary (255) to 256 rows on one rank (the
# loss's phases over a padded vocabulary without a group) and to 2 x 128
# over tp = 2.
run cuda-target-v255 1 1e-4 "$m/gpt2-v255.json" --batch 4 --seq 32 -- \
  --target cuda --microbatches 2
run cuda-target-v255-tp2-sp 2 1e-4 "$m/gpt2-v255.json" --batch 4 --seq 32 -- \
  --target cuda --mesh tp=2 --sequence-parallel
run interleaved-pp2 2 1e-4 "$gpt2_4l" --batch 8 --seq 16 -- \
  --mesh pp=2 --schedule interleaved-1f1b --virtual-stages 2 --microbatches 4
run zb-v-pp2 2 1e-4 "$gpt2_4l" --batch 8 --seq 16 -- \
  --mesh pp=2 --schedule zb-v --virtual-stages 2 --microbatches 4
run gpipe-blocking-pp2 2 1e-4 "$gpt2_4l" --batch 8 --seq 16 -- \
  --mesh pp=2 --schedule gpipe --microbatches 4 --blocking-transfers
run tp2-pp2-sp-zbh1 4 1e-4 "$gpt2_4l" --batch 8 --seq 16 -- \
  --mesh tp=2,pp=2 --sequence-parallel --microbatches 2 --schedule zb-h1
# Interleaved 1F1B with tp: a rank's started receives go out as one NCCL
# group whose messages the peer sends from two flushes (the emulated
# NCCL's groups once hung on it; test/NcclEmulationTest.cpp).
run tp2-pp2-interleaved 4 1e-4 "$gpt2_4l" --batch 8 --seq 16 -- \
  --mesh tp=2,pp=2 --schedule interleaved-1f1b --microbatches 4
run llama-bf16-dp2-tp2 4 2e-2 "$llama" --batch 4 --seq 16 --dtype bf16 -- \
  --mesh dp=2,tp=2 --sequence-parallel --grad-reduce-dtype bf16

# A run resumed on the device from its own checkpoint (a Hugging Face
# directory with the training state) continues bit for bit: four steps
# straight, and two, saved, loaded and two more, end in the same
# checkpoint; the evaluation (Interpreter::evaluate, the forward's kernels
# without dropout) every two steps gives the CPU's loss. One rank and a
# pipeline on 2.
python3 -c "
import random; random.seed(0)
open('$work/tokens.bin', 'wb').write(bytes(
    b for _ in range(20000) for b in random.randrange(256).to_bytes(2, 'little')))"
# resume NAME RANKS
resume() {
  local name=$1 ranks=$2 launch=() data side
  [ "$ranks" -gt 1 ] && launch=(--ranks "$ranks")
  data=(--data "$work/tokens.bin" --eval-data "$work/tokens.bin"
    --eval-every 2 --timeout 120)
  for side in cpu cuda; do
    "$build/bin/tpc-run" "$m/$name.tpcx" "${launch[@]}" --device "$side" \
      --init-seed 7 "${data[@]}" --steps 4 \
      --save-checkpoint "$work/$name-$side-4.safetensors" \
      >"$work/$name-$side-4.txt" 2>&1 </dev/null ||
      { echo "FAIL resume $name: 4 steps on $side:"; tail -3 "$work/$name-$side-4.txt"; failed=1; return; }
  done
  "$build/bin/tpc-run" "$m/$name.tpcx" "${launch[@]}" --device cuda \
    --init-seed 7 "${data[@]}" --steps 2 --save-checkpoint "$work/$name-2" \
    >"$work/$name-2.txt" 2>&1 </dev/null &&
    "$build/bin/tpc-run" "$m/$name.tpcx" "${launch[@]}" --device cuda \
      --load-checkpoint "$work/$name-2" "${data[@]}" --steps 2 \
      --save-checkpoint "$work/$name-2+2.safetensors" \
      >"$work/$name-2+2.txt" 2>&1 </dev/null ||
    { echo "FAIL resume $name: 2 + 2 steps:"; tail -3 "$work/$name-2+2.txt"; failed=1; return; }
  if ! cmp -s "$work/$name-cuda-4.safetensors" "$work/$name-2+2.safetensors"; then
    echo "FAIL resume $name: 2 steps, saved, loaded and 2 more differ from 4"
    failed=1
    return
  fi
  # eval K loss X: the CPU's within 1e-4 (fp32), both evaluations.
  if ! python3 - "$work/$name-cpu-4.txt" "$work/$name-cuda-4.txt" <<'EOF'
import sys
def evals(path):
    return [float(l.split()[3]) for l in open(path) if l.startswith("eval ")]
cpu, cuda = evals(sys.argv[1]), evals(sys.argv[2])
sys.exit(not (len(cpu) == 2 and len(cuda) == 2 and
              all(abs(a - b) <= 1e-4 * abs(a) for a, b in zip(cpu, cuda))))
EOF
  then
    echo "FAIL resume $name: eval lines differ from the CPU's:"
    grep -h '^eval' "$work/$name-cpu-4.txt" "$work/$name-cuda-4.txt"
    failed=1
    return
  fi
  echo "ok   resume $name ($ranks rank$([ "$ranks" -gt 1 ] && echo s)):" \
    "4 steps = 2 + saved, loaded + 2, bit for bit;" \
    "$(grep '^eval 4' "$work/$name-cuda-4.txt" | cut -d' ' -f1-4) as on the CPU"
}
resume gpt2-tiny 1
resume gpt2-tiny-pp2 2
exit $failed
