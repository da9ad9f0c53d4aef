#!/bin/sh
# runtime/test/gemm-algo-choice.sh TPC-CUDA-BENCH: TPCRT_CUDA_GEMM_ALGO
# through the emulated CUDA backend (TPCRT_CUDA_BACKEND; ctest
# runtime.GemmAlgoChoiceEmulated), whose cuBLASLt heuristic offers three
# algorithms: =2 runs the third (the bench labels it tpc-algo2, nothing
# said), =5 runs the last of the three and says so, =8 is refused with the
# range, exit 1. The bench's runs of a case are one step, timed by the
# device's events, and its plan (and the fallback's note) made once.
bench=$1
case="--device cuda --warmup 1 --iters 1 gemm:64,32,48"
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
# shellcheck disable=SC2086
out=$(TPCRT_CUDA_GEMM_ALGO=2 "$bench" $case 2>&1) || fail "=2 failed"
echo "$out" | grep -q '"tool": "tpc-algo2"' || fail "=2: no tpc-algo2 line"
echo "$out" | grep -q 'usable' && fail "=2: a fallback said"
echo "$out" | grep -q '"timing": "device events, runs back to back"' ||
  fail "=2: not timed by the device's events"
# shellcheck disable=SC2086
out=$(TPCRT_CUDA_GEMM_ALGO=5 "$bench" $case 2>&1) || fail "=5 failed"
[ "$(echo "$out" | grep -c 'gave 3 usable algorithm(s) for .*; it runs its #2')" = 1 ] ||
  fail "=5: the fallback to the third is not said once"
# shellcheck disable=SC2086
out=$(TPCRT_CUDA_GEMM_ALGO=8 "$bench" $case 2>&1) && fail "=8 was accepted"
echo "$out" | grep -q 'TPCRT_CUDA_GEMM_ALGO=8: expected an integer from 0 to 7' ||
  fail "=8: not the expected message"
echo "ok: TPCRT_CUDA_GEMM_ALGO 2 runs the third, 5 the last (said), 8 refused"
