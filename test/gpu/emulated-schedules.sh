#!/usr/bin/env bash
# test/gpu/emulated-schedules.sh BUILD WORK: the four single-rank training
# steps of device-check.sh's models stage (test/gpu/models.sh), and GPT-2
# on 2 ranks with tensor and sequence parallelism and the vocabulary-split
# loss (the kernels only a split program runs), on the CUDA backend
# compiled for the host (BUILD/lib/libtpcrt-cuda-emulated.so, its NCCL
# between the ranks), once
# per thread schedule of the kernel emulation (TPCRT_EMULATION_SCHEDULE,
# runtime/test/CudaEmulation.h): forward (the default), reverse (also the
# blocks last first), warps (one warp runs ahead of the others) and
# shuffle:1 (random turns; the 2-rank run: forward and shuffle:1). The gradients, outputs and checkpoint of every
# schedule must be the same bytes as forward's: a kernel that lacks a
# barrier, or whose sums depend on the order threads or blocks run in,
# changes them. The device's kernels promise results that repeat bit for
# bit (no atomics whose order changes a sum); this is where that is held.
# Not a GPU run. (runtime.CudaEmulatedSchedules)
set -euo pipefail
source "$(dirname "$0")/emulated-setup.sh" "$1" "$2"
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models" >"$work/models.txt"
export TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl
failed=0
for run in gpt2-tiny:1 llama-tiny:1 gpt2-tiny-bf16:1 llama-tiny-bf16:1 \
    gpt2-tiny-tp2-sp:2; do
  model=${run%:*} ranks=${run#*:}
  schedules="forward reverse warps shuffle:1"
  # Two ranks take longer: forward and shuffle:1 only.
  [ "$ranks" -gt 1 ] && schedules="forward shuffle:1"
  for schedule in $schedules; do
    tag=$work/dumps/$model-${schedule/:/}
    if ! TPCRT_EMULATION_SCHEDULE=$schedule "$build/bin/tpc-run" \
        "$work/models/$model.tpcx" --ranks "$ranks" --timeout 120 \
        --device cuda --init-seed 7 \
        --synthetic-seed 7 --steps 2 --dump-grads "$tag-grads.safetensors" \
        --dump-outputs "$tag-out.safetensors" \
        --save-checkpoint "$tag-ckpt.safetensors" >"$tag.txt" 2>&1; then
      cat "$tag.txt"
      echo "FAIL $model, schedule $schedule: tpc-run failed"
      failed=1
      continue
    fi
    [ "$schedule" = forward ] && { echo "$model: ran (forward)"; continue; }
    same=1
    for kind in grads out ckpt; do
      if ! cmp -s "$work/dumps/$model-forward-$kind.safetensors" \
          "$tag-$kind.safetensors"; then
        same=0
        # Which tensors differ, and by how much.
        python3 "$root/test/gpu/compare_dumps.py" --tol 0 \
          "$work/dumps/$model-forward-$kind.safetensors" \
          "$tag-$kind.safetensors" || true
      fi
    done
    if [ $same = 1 ]; then
      echo "$model, schedule $schedule: the same bytes as forward"
    else
      echo "FAIL $model, schedule $schedule: results differ from forward's"
      failed=1
    fi
  done
done
exit $failed
