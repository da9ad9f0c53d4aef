#!/usr/bin/env bash
# test/gpu/driver-check.sh WORK: device-check.sh's driver (the part after
# the stage functions: which stages run in which order, what each outcome
# does to the rest, the summary and the exit status) with a stand-in for
# every stage (TPC_GPU_STAGE_RUNNER), told which stages fail, skip or
# overrun. Each stage itself is tried elsewhere (runtime.CudaEmulated*,
# gpu.SanitizeStage); the driver past stage 2 runs only on a GPU machine,
# once: this tries its paths here first (ctest gpu.DeviceCheckDriver).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$1
rm -rf "$work"
mkdir -p "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The stand-in stage: appends "NAME ATTENTION" to $FAKE_CALLS (ATTENTION:
# the TPCRT_CUDA_ATTENTION it was given, "-" for none); exits with the
# status $FAKE_RC gives it ("NAME:STATUS" words; else 0) after sleeping what
# $FAKE_SLEEP gives it ("NAME:SECONDS"); the bench stages leave the JSON
# lines the driver merges, as the real ones do.
cat >"$work/stage" <<'EOF'
#!/usr/bin/env bash
name=$2
rc=0
echo "$name ${TPCRT_CUDA_ATTENTION:--}" >>"$FAKE_CALLS"
echo "the $name stage's output"
for word in ${FAKE_SLEEP:-}; do
  [ "${word%%:*}" = "$name" ] && sleep "${word#*:}"
done
for word in ${FAKE_RC:-}; do
  [ "${word%%:*}" = "$name" ] && rc=${word#*:}
done
common='"kind": "gpt_step", "hidden": 2048, "layers": 8, "seq": 2048, "batch": 8, "vocab": 50257'
case $name in
  gpu) echo "GPU 0: a stand-in"; echo "devices 1" ;;
  bench-kernels-tpc)
    echo '{"tool": "tpc", "kind": "gemm", "case": "gemm:8192,8192,8192", "m": 8192, "k": 8192, "n": 8192, "layout": "in_out", "tflops": 700.0}' >"$WORK/bench-tpc.jsonl" ;;
  bench-kernels-torch)
    echo '{"tool": "torch", "kind": "gemm", "case": "gemm:8192,8192,8192", "m": 8192, "k": 8192, "n": 8192, "layout": "in_out", "tflops": 720.0}' >"$WORK/bench-torch.jsonl" ;;
  bench-gpt-tpc)
    echo "{\"tool\": \"tpc\", $common, \"step_ms\": 80.0, \"mfu\": 0.7}" >"$WORK/gpt-tpc.jsonl" ;;
  bench-gpt-torch)
    echo "{\"tool\": \"torch\", $common, \"step_ms\": 100.0, \"mfu\": 0.56, \"impl\": \"hf\"}" >"$WORK/gpt-torch.jsonl" ;;
  profile-gpt-tpc)
    printf 'step 2 by opcode: a stand-in\nTFLOP/s from the model: a stand-in\nmeasured/predicted (a stand-in)\nmore\ncalibrated from step 2 (a stand-in)\ncalibrated attention (a stand-in)\nleft as they were: more\n' >"$WORK/gpt-profile.txt" ;;
esac
exit "$rc"
EOF
chmod +x "$work/stage"

# drive NAME [VAR=VALUE...]: the driver with the stand-in and the given
# environment; its exit status in $WORK_CASE/rc, the stages run (in order)
# in $WORK_CASE/calls, its summary in $WORK_CASE/out/summary.txt.
drive() {
  local name=$1
  shift
  case_dir=$work/$name
  mkdir -p "$case_dir/out" "$case_dir/dumps"
  : >"$case_dir/calls"
  env "$@" OUT="$case_dir/out" TPC_GPU_WORK="$case_dir/dumps" \
    TPC_GPU_STAGE_RUNNER="$work/stage" FAKE_CALLS="$case_dir/calls" \
    TPC_GPU_PYTHON=python3 TPC_GPU_CARRY="$case_dir" \
    bash "$root/test/gpu/device-check.sh" >"$case_dir/log" 2>&1
  echo $? >"$case_dir/rc"
  summary=$case_dir/out/summary.txt
}

# expect_order WHAT WANT: the stages run, in order (their names), are WANT.
expect_order() {
  local got
  got=$(cut -d' ' -f1 "$case_dir/calls" | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$2" ] || fail "$1: the stages ran as '$got', expected '$2'"
}
expect_rc() {
  [ "$(cat "$case_dir/rc")" = "$2" ] ||
    fail "$1: exit $(cat "$case_dir/rc"), expected $2 (log: $case_dir/log)"
}
expect_line() { # WHAT REGEX: a summary line matches REGEX
  grep -qE -- "$2" "$summary" || fail "$1: no summary line matching '$2'"
}
expect_no_line() {
  ! grep -qE -- "$2" "$summary" || fail "$1: a summary line matches '$2'"
}

all="build gpu kernels models ranks nccl bench-kernels-tpc bench-kernels-torch bench-gpt-tpc bench-gpt-torch profile-gpt-tpc sanitize kernels-cudnn bench-attention-cudnn kernels-mma bench-attention-mma"

# 1. Every stage passes: all sixteen in the documented order, the
# sanitizer after 6f, the merged comparisons and the profile's first two
# lines in the summary, at most 8 files under OUT (what the device tool
# brings back), exit 0.
drive pass
expect_rc pass 0
expect_order pass "$all"
expect_line pass '^stage 1 build: PASS'
expect_line pass '^stage 6e bench-attention-mma: PASS'
expect_line pass '^  GPU 0: a stand-in$'
expect_line pass '^gemm .*8192.*: tpc 700.0 TFLOP/s vs torch 720.0 TFLOP/s'
expect_line pass '^GPT-2 step \(h 2048, L 8, s 2048, B 8, V 50257\): tpc 80.0 ms MFU 70.0% vs torch 100.0 ms'
expect_line pass '^step 2 by opcode: a stand-in$'
expect_line pass '^TFLOP/s from the model: a stand-in$'
expect_line pass '^measured/predicted \(a stand-in\)$'
expect_line pass '^calibrated from step 2 \(a stand-in\)$'
expect_line pass '^calibrated attention \(a stand-in\)$'
expect_no_line pass '^left as they were'
expect_no_line pass '^more$'
expect_line pass '^result: PASS$'
[ -f "$case_dir/out/bench.json" ] || fail "pass: no bench.json"
n=$(find "$case_dir/out" -type f | wc -l)
[ "$n" -le 8 ] || fail "pass: $n files under OUT, more than the 8 that come back"
grep -q "the models stage's output" "$case_dir/out/models.log" ||
  fail "pass: the models stage's output is not in models.log"

# 2. No GPU: the build and stage 2 alone, exit 77; with the build failed
# too, exit 1.
drive nogpu FAKE_RC="gpu:77"
expect_rc nogpu 77
expect_order nogpu "build gpu"
expect_line nogpu '^result: SKIP \(the build passed; no GPU for the rest\)$'
drive nogpu-nobuild FAKE_RC="gpu:77 build:1"
expect_rc nogpu-nobuild 1
expect_order nogpu-nobuild "build gpu"
expect_line nogpu-nobuild '^stage 1 build: FAIL \(exit 1'
expect_line nogpu-nobuild '^result: FAIL \(the build failed\)$'

# 3. A GPU but the build failed: nothing else runs, exit 1.
drive nobuild FAKE_RC="build:2"
expect_rc nobuild 1
expect_order nobuild "build gpu"
expect_line nobuild '^the build failed: the GPU stages are skipped$'

# 4. Stage 3 fails and the attention cases fail with the default kernels
# but pass on mma.sync: the sanitizer at once, 3a, 5b at once, then every
# later stage with TPCRT_CUDA_ATTENTION=mma but those that set their own
# (the stand-in stands for them all: it sees what the driver exports); 5b
# and 7 not again; two failures.
drive mma FAKE_RC="kernels:1 kernels-attention:1"
expect_rc mma 1
expect_order mma "build gpu kernels sanitize kernels-attention kernels-mma models ranks nccl bench-kernels-tpc bench-kernels-torch bench-gpt-tpc bench-gpt-torch profile-gpt-tpc kernels-cudnn bench-attention-cudnn bench-attention-mma"
expect_line mma 'the stages below run with TPCRT_CUDA_ATTENTION=mma'
expect_line mma '^result: FAIL \(2 stage\(s\)\)$'
[ "$(awk '$1 == "models" { print $2 }' "$case_dir/calls")" = mma ] ||
  fail "mma: the models stage ran without TPCRT_CUDA_ATTENTION=mma"
[ "$(awk '$1 == "kernels-mma" { print $2 }' "$case_dir/calls")" = - ] ||
  fail "mma: stage 5b ran with TPCRT_CUDA_ATTENTION set"

# 5. Stage 3 fails but the attention cases pass: the sanitizer at once and
# 3a, then the rest on the default kernels, 5b in its place at the end.
drive kernels FAKE_RC="kernels:1"
expect_rc kernels 1
expect_order kernels "build gpu kernels sanitize kernels-attention models ranks nccl bench-kernels-tpc bench-kernels-torch bench-gpt-tpc bench-gpt-torch profile-gpt-tpc kernels-cudnn bench-attention-cudnn kernels-mma bench-attention-mma"
expect_no_line kernels 'TPCRT_CUDA_ATTENTION=mma'
[ "$(awk '$1 == "models" { print $2 }' "$case_dir/calls")" = - ] ||
  fail "kernels: the models stage ran with TPCRT_CUDA_ATTENTION set"
expect_line kernels '^result: FAIL \(1 stage\(s\)\)$'

# 6. A stage that fails, one that skips (77: not a failure) and one that
# overruns its budget (TPC_GPU_BUDGET_<STAGE>): each said, the next stages
# still run.
drive outcomes FAKE_RC="models:3 ranks:77" FAKE_SLEEP="nccl:30" \
  TPC_GPU_BUDGET_NCCL=1
expect_rc outcomes 1
expect_order outcomes "$all"
expect_line outcomes '^stage 4 models: FAIL \(exit 3\) \('
expect_line outcomes '^stage 4b ranks: SKIP \('
expect_line outcomes '^stage 5 nccl: FAIL \(timeout after 1s\)'
expect_line outcomes '^result: FAIL \(2 stage\(s\)\)$'

# 7. The deadline (TPC_GPU_DEADLINE): once less than 5 s are left, every
# later stage is skipped, said and counted, and the driver still ends with
# its summary.
drive deadline TPC_GPU_DEADLINE=7 FAKE_SLEEP="kernels:3"
expect_rc deadline 1
expect_order deadline "build gpu kernels"
expect_line deadline '^stage 4 models: SKIP \(no time left of the 7s deadline\)$'
expect_line deadline '^stage 6e bench-attention-mma: SKIP \(no time left'
expect_line deadline '^result: FAIL \(13 stage\(s\)\)$'

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "device-check.sh's driver: every path as expected"
