#!/bin/sh
# test/gpu/emulated-stall.sh BUILD WORK: a rank that stops never hangs a
# --device cuda run. Two ranks of a data-parallel GPT-2 tiny train on the
# CUDA backend compiled for the host (libtpcrt-cuda-emulated.so) with its
# emulated NCCL (runtime/test/emulation/README.md); once step 2 is printed,
# one rank is stopped (SIGSTOP). The other must end within tpc-run's
# --timeout (5 s) plus teardown: exit status non-zero, an `error: rank R:
# ... no progress for 5 s` line naming the step and kernel, no rank left.
# The device's polled waits (the step's synchronize, NCCL's async errors)
# under the watchdog are what end it. ctest: runtime.CudaEmulatedStall.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
. "$root/runtime/test/run_helpers.sh"
require_mpiexec
backend=$build/lib/libtpcrt-cuda-emulated.so
[ -f "$backend" ] || { echo "no $backend"; exit 1; }
fresh_dir "$work"
mkdir -p nccl
"$build/bin/tpc-import" "$root/examples/configs/gpt2-tiny.json" --batch 4 \
  --seq 32 -o m.mlir || exit 1
"$build/bin/tpc-compile" m.mlir --train --mesh dp=2 -o dp2.tpcx 2>/dev/null ||
  exit 1
export TPCRT_CUDA_BACKEND="$backend" TPCRT_NCCL_LIBRARY="$backend"
export TPCRT_NCCL_EMULATION_DIR="$work/nccl"
start=$(now_ms)
"$build/bin/tpc-run" "$work/dp2.tpcx" --ranks 2 --device cuda --init-seed 1 \
  --synthetic-seed 1 --steps 100000000 --timeout 5 >out.txt 2>err.txt </dev/null &
job=$!
if ! wait_for_step 2; then
  fail "no step 2 within 30 s: $(cat err.txt)"
else
  victim=$(rank_pids "$work/dp2.tpcx" | tail -n 1)
  kill -STOP "$victim"
  stopped=$(now_ms)
  if ! wait_gone "$job" 600; then
    fail "the run still goes 60 s after a rank stopped"
    kill -KILL "$job" 2>/dev/null
  fi
  wait "$job"
  rc=$?
  elapsed=$(( $(now_ms) - stopped ))
  [ "$rc" -ne 0 ] || fail "exit status 0 with a rank stopped"
  grep -q '^error: rank [01]: step [0-9]*, kernel .*no progress for 5 s' err.txt ||
    fail "no watchdog message: $(cat err.txt)"
  echo "a stopped rank: exit status $rc, $elapsed ms after the stop: $(grep -m1 'no progress' err.txt)"
  kill -CONT "$victim" 2>/dev/null
  kill -KILL "$victim" 2>/dev/null
fi
sleep 1
left=$(rank_pids "$work/dp2.tpcx")
[ -z "$left" ] || { fail "ranks left running: $left"; kill -KILL $left 2>/dev/null; }
echo "emulated-stall.sh: $failures failures"
[ "$failures" -eq 0 ]
