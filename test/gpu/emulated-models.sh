#!/usr/bin/env bash
# test/gpu/emulated-models.sh BUILD WORK: device-check.sh's models stage (two
# training steps of the tiny GPT-2 and Llama, fp32 and bf16, on the CPU and
# on --device cuda, loss, gradients, params and AdamW state compared) with
# --device cuda served by the CUDA backend compiled for the host,
# BUILD/lib/libtpcrt-cuda-emulated.so (runtime/test/emulation/README.md):
# the device, launchers and kernels as written, emulated on the CPU. Not a
# GPU run. The models are compiled by BUILD/bin's tpc-import/tpc-compile
# into WORK/models (test/gpu/models.sh). ctest: runtime.CudaEmulatedModels.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
backend=$build/lib/libtpcrt-cuda-emulated.so
[ -f "$backend" ] || { echo "no $backend (a build without nvcc has none)"; exit 1; }
rm -rf "$work"
mkdir -p "$work/dumps"
bash "$root/test/gpu/models.sh" "$build/bin" "$work/models"
TPCRT_CUDA_BACKEND=$backend TPC_GPU_CARRY=$work TPC_GPU_BUILD=$build \
  TPC_GPU_WORK=$work/dumps TPC_GPU_DUT=cuda \
  bash "$root/test/gpu/device-check.sh" --stage models
