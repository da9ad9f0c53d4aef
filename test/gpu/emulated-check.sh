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
# The models are compiled by BUILD/bin's tpc-import/tpc-compile into
# WORK/models (test/gpu/models.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
stage=$3
backend=$build/lib/libtpcrt-cuda-emulated.so
[ -f "$backend" ] || { echo "no $backend (a build without nvcc has none)"; exit 1; }
rm -rf "$work"
mkdir -p "$work/dumps" "$work/nccl"
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models"
TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl TPC_GPU_RANKS=4 TPC_GPU_RUN_TIMEOUT=120 \
  TPC_GPU_CARRY=$work TPC_GPU_BUILD=$build TPC_GPU_WORK=$work/dumps \
  TPC_GPU_DUT=cuda bash "$root/test/gpu/device-check.sh" --stage "$stage"
