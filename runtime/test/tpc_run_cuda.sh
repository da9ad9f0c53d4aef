#!/bin/sh
# tpc_run_cuda.sh TPC_RUN WRITE_FIXTURES DIR HAVE_CUDA
#
# --device cuda where it cannot run: no GPU or driver (this machine), no
# backend library, a library that is not the backend. Each is one
# "error: --device cuda: ..." line naming what is missing, exit status 1;
# never a crash, never the CPU instead. On a machine with a GPU the first
# check does not apply (test/gpu/device-check.sh runs the real thing) and
# the script checks only the library refusals. HAVE_CUDA (the build's
# TPCRT_HAVE_CUDA) OFF: a runtime built without the backend says so.
set -u
run=$1
fixtures=$2
dir=$3
have_cuda=$4
. "$(dirname "$0")/run_helpers.sh"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$fixtures" "$dir" >/dev/null || exit 1
cd "$dir" || exit 1
checks=0
model="tiny.tpcx --weights weights.safetensors --inputs inputs.safetensors"

# expect_refusal TEXT [ENV=VALUE]: tpc-run --device cuda exits 1 with one
# stderr line starting "error: --device cuda: " and containing TEXT.
expect_refusal() {
  want=$1
  shift
  checks=$((checks + 1))
  # shellcheck disable=SC2086
  env "$@" "$run" $model --device cuda >out.txt 2>err.txt
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$* tpc-run --device cuda: exit status $rc, expected 1 ($(cat err.txt))"
  elif [ "$(wc -l <err.txt)" -ne 1 ] ||
       ! grep -q '^error: --device cuda: ' err.txt; then
    fail "$* tpc-run --device cuda: stderr is not one error line: $(cat err.txt)"
  elif ! grep -qF -- "$want" err.txt; then
    fail "$* tpc-run --device cuda: '$want' not in: $(cat err.txt)"
  elif [ -s out.txt ]; then
    fail "$* tpc-run --device cuda ran something: $(cat out.txt)"
  fi
}

if [ "$have_cuda" = OFF ]; then
  expect_refusal "this runtime was built without its CUDA backend"
  echo "tpc_run_cuda.sh: $checks runs, $failures failed"
  [ "$failures" -eq 0 ]
  exit
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1
then
  expect_refusal "no CUDA device: CUDA: "
  # No driver at all (this machine): said in those words, not only the
  # runtime's "driver version is insufficient".
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    expect_refusal "(no NVIDIA driver was found: libcuda.so.1; this backend's CUDA runtime is "
  fi
fi
# The same refusals from the backend compiled for the host
# (libtpcrt-cuda-emulated.so, where the build has it), whose runtime is CUDA
# 13.0 and whose driver version and device count are set by the test.
emulated=$(dirname "$run")/../lib/libtpcrt-cuda-emulated.so
if [ -f "$emulated" ]; then
  expect_refusal "no CUDA device: CUDA: CUDA driver version is insufficient for CUDA runtime version (no NVIDIA driver was found: libcuda.so.1; this backend's CUDA runtime is 13.0)" \
    TPCRT_CUDA_BACKEND="$emulated" TPCRT_EMULATED_DRIVER_VERSION=0
  expect_refusal "no CUDA device: CUDA: CUDA driver version is insufficient for CUDA runtime version (the NVIDIA driver supports CUDA 12.8, this backend's CUDA runtime is 13.0)" \
    TPCRT_CUDA_BACKEND="$emulated" TPCRT_EMULATED_DRIVER_VERSION=12080
  expect_refusal "no CUDA device: CUDA: no CUDA-capable device is detected" \
    TPCRT_CUDA_BACKEND="$emulated" TPCRT_EMULATED_DEVICES=0
fi
expect_refusal "cannot find the CUDA backend libtpcrt-cuda.so (looked at $dir/none.so; set TPCRT_CUDA_BACKEND to its path)" \
  TPCRT_CUDA_BACKEND="$dir/none.so"
printf 'not a library' >garbage.so
expect_refusal "cannot open the CUDA backend: $dir/garbage.so: " \
  TPCRT_CUDA_BACKEND="$dir/garbage.so"
libm=$(ldconfig -p 2>/dev/null | sed -n 's/.*libm\.so\.6 .*=> //p' | head -n 1)
if [ -n "$libm" ]; then
  expect_refusal "$libm: not a tpcrt CUDA backend (its entry points are missing)" \
    TPCRT_CUDA_BACKEND="$libm"
fi
echo "tpc_run_cuda.sh: $checks runs, $failures failed"
[ "$failures" -eq 0 ]
