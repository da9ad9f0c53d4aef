#!/usr/bin/env bash
# test/gpu/emulated-fusions.sh BUILD WORK: the device's own fused kernels
# (runtime/cuda/FusionPlan.h: dropout + residual add, the norm backward with
# its residual add, the loss with its gradient, tensor parallelism's bias +
# dropout + residual add, each residual add with the next norm) give the
# unfused kernels' results bit for bit. The
# four single-rank training steps of device-check.sh's models stage
# (test/gpu/models.sh; GPT-2 fp32 with two microbatches, where the memory
# plan gives the loss's unread count the gradient's bytes), GPT-2 compiled
# without microbatches and (bf16) without dropout, GPT-2 with tp = 2 on 2
# ranks (tp + sp fp32, bf16, fp32 without dropout; NCCL emulated through
# files) and Llama (bf16) with tp = 2 and sequence parallelism (its adds
# with the RMS norms), and GPT-2 on two pipeline stages (each stage's
# updates sum its part of the gradients' norm), and GPT-2 whose vocabulary
# --target cuda pads (the loss and its gradient over padded rows) run on the
# CUDA backend compiled for the host (BUILD/lib/libtpcrt-cuda-emulated.so)
# with TPCRT_CUDA_FUSIONS=kernels and =none: the gradients, outputs and
# checkpoints must be the same bytes. A fused kernel that reads or writes
# anything the unfused ones do not (a result written after bytes the memory
# plan handed on, a missed rounding) changes them, where a tolerance would
# let a few elements pass. cuBLASLt's epilogues are left out (=kernels):
# they sum in their own order. Not a GPU run. (runtime.CudaEmulatedFusions)
set -euo pipefail
source "$(dirname "$0")/emulated-setup.sh" "$1" "$2"
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models" >"$work/models.txt"
"$build/bin/tpc-import" "$work/models/gpt2-tiny.json" --batch 4 --seq 32 \
  -o "$work/models/gpt2-tiny-one.mlir"
"$build/bin/tpc-compile" "$work/models/gpt2-tiny-one.mlir" --train \
  -o "$work/models/gpt2-tiny-one.tpcx" 2>/dev/null
# Tensor parallel on 2 ranks: GPT-2's row-parallel bias, dropout and
# residual add as one kernel (bf16 too, where each intermediate's rounding
# counts; and without dropout, the bias add and the residual add).
"$build/bin/tpc-import" "$work/models/gpt2-tiny.json" --batch 4 --seq 32 \
  --dtype bf16 -o "$work/models/gpt2-tiny-bf16.mlir" 2>/dev/null
"$build/bin/tpc-compile" "$work/models/gpt2-tiny-bf16.mlir" --train \
  --mesh tp=2 -o "$work/models/gpt2-tiny-tp2-bf16.tpcx" 2>/dev/null
"$build/bin/tpc-import" "$work/models/gpt2-tiny.json" --batch 4 --seq 32 \
  --dropout 0 -o "$work/models/gpt2-tiny-nodrop.mlir"
"$build/bin/tpc-compile" "$work/models/gpt2-tiny-nodrop.mlir" --train \
  --mesh tp=2 -o "$work/models/gpt2-tiny-tp2-nodrop.tpcx" 2>/dev/null
# Without dropout on one rank each residual add is alone (the product has a
# bias) and joins the next layer_norm; Llama with sequence parallelism adds
# its branches after the reduce_scatter and joins the next rms_norm. Both in
# bf16, so that the residual stream's rounding before the norm's sums shows.
"$build/bin/tpc-import" "$work/models/gpt2-tiny.json" --batch 4 --seq 32 \
  --dropout 0 --dtype bf16 -o "$work/models/gpt2-tiny-nodrop-bf16.mlir" \
  2>/dev/null
"$build/bin/tpc-compile" "$work/models/gpt2-tiny-nodrop-bf16.mlir" --train \
  -o "$work/models/gpt2-tiny-nodrop-bf16.tpcx" 2>/dev/null
"$build/bin/tpc-import" "$work/models/llama-tiny.json" --batch 4 --seq 32 \
  --dtype bf16 -o "$work/models/llama-tiny-sp-bf16.mlir" 2>/dev/null
"$build/bin/tpc-compile" "$work/models/llama-tiny-sp-bf16.mlir" --train \
  --mesh tp=2 --sequence-parallel \
  -o "$work/models/llama-tiny-tp2-sp-bf16.tpcx" 2>/dev/null
export TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl
mkdir -p "$work/nccl"
failed=0
for model in gpt2-tiny gpt2-tiny-one llama-tiny gpt2-tiny-bf16 \
    llama-tiny-bf16 gpt2-tiny-tp2-sp:2 gpt2-tiny-tp2-bf16:2 \
    gpt2-tiny-tp2-nodrop:2 gpt2-tiny-nodrop-bf16 llama-tiny-tp2-sp-bf16:2 \
    gpt2-tiny-pp2:2 gpt2-v250-cuda; do
  ranks=1
  case $model in *:*) ranks=${model#*:} model=${model%%:*} ;; esac
  for fusions in kernels none; do
    tag=$work/dumps/$model-$fusions
    if ! TPCRT_CUDA_FUSIONS=$fusions "$build/bin/tpc-run" \
        "$work/models/$model.tpcx" --ranks "$ranks" --timeout 120 \
        --device cuda --init-seed 7 \
        --synthetic-seed 7 --steps 2 --dump-grads "$tag-grads.safetensors" \
        --dump-outputs "$tag-outputs.safetensors" \
        --save-checkpoint "$tag-checkpoint" >"$tag.log" 2>&1; then
      echo "FAIL $model ($fusions): tpc-run failed"
      cat "$tag.log"
      failed=1
      continue 2
    fi
  done
  fused=$work/dumps/$model-kernels unfused=$work/dumps/$model-none
  if cmp -s "$fused-grads.safetensors" "$unfused-grads.safetensors" &&
      cmp -s "$fused-outputs.safetensors" "$unfused-outputs.safetensors" &&
      diff -rq "$fused-checkpoint" "$unfused-checkpoint" >/dev/null; then
    echo "ok   $model: fused kernels = unfused, bit for bit ($(grep '^step 2' "$fused.log"))"
  else
    echo "FAIL $model: the fused kernels' gradients, outputs or checkpoint differ"
    grep '^step' "$fused.log" "$unfused.log" || true
    failed=1
  fi
done
# A value the device does not know is refused, saying which it takes.
if TPCRT_CUDA_FUSIONS=some "$build/bin/tpc-run" \
    "$work/models/llama-tiny.tpcx" --device cuda --init-seed 7 --synthetic-seed 7 --steps 1 \
    >"$work/bad.log" 2>&1; then
  echo "FAIL TPCRT_CUDA_FUSIONS=some was accepted"
  failed=1
elif ! grep -q "TPCRT_CUDA_FUSIONS=some: expected all, kernels or none" \
    "$work/bad.log"; then
  echo "FAIL TPCRT_CUDA_FUSIONS=some: not the expected message"
  cat "$work/bad.log"
  failed=1
else
  echo "ok   TPCRT_CUDA_FUSIONS=some refused: $(grep -m1 TPCRT_CUDA_FUSIONS "$work/bad.log")"
fi
exit $failed
