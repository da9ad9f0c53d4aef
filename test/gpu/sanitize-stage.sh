#!/usr/bin/env bash
# test/gpu/sanitize-stage.sh BUILD WORK: device-check.sh's stage 7
# (sanitize) with a stand-in compute-sanitizer that records what it is asked
# and reports the errors it is told to: which opcodes and tools the stage
# picks, the lines it prints, and when it fails. The script's plumbing, not
# a sanitizer run: that needs a GPU (ctest gpu.SanitizeStage).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
rm -rf "$work"
mkdir -p "$work/bin" "$work/out" "$work/dumps"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# The stand-in: one line per call in calls.txt ("TOOL OP DTYPE"); errors for
# the calls that $FAKE_SANITIZER_ERRORS names ("TOOL:OP" words).
cat >"$work/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
tool= op= dtype= errors=0
while [ $# -gt 0 ]; do
  case $1 in
    --tool) tool=$2; shift ;;
    --op) op=$2; shift ;;
    --dtype) dtype=$2; shift ;;
  esac
  shift
done
echo "$tool $op $dtype" >>"$FAKE_SANITIZER_CALLS"
for e in ${FAKE_SANITIZER_ERRORS:-}; do
  [ "$e" = "$tool:$op" ] && errors=1
done
# racecheck sums up in its own words (as the toolkit's does).
if [ "$tool" = racecheck ]; then
  echo "========= RACECHECK SUMMARY: $errors hazard$([ $errors = 1 ] || echo s) displayed ($errors error$([ $errors = 1 ] || echo s), 0 warnings)"
else
  echo "========= ERROR SUMMARY: $errors error$([ $errors = 1 ] || echo s)"
fi
[ $errors = 0 ] || exit 9
EOF
chmod +x "$work/bin/compute-sanitizer"

export OUT=$work/out TPC_GPU_BUILD=$build TPC_GPU_WORK=$work/dumps
export FAKE_SANITIZER_CALLS=$work/calls.txt
check=$root/test/gpu/device-check.sh

# stage EXPECTED_STATUS: the stage with the stand-in first on PATH.
stage() {
  : >"$FAKE_SANITIZER_CALLS"
  PATH=$work/bin:$PATH bash "$check" --stage sanitize >"$work/log.txt" 2>&1
  local rc=$?
  [ "$rc" -eq "$1" ] || fail "exit $rc, not $1: $(cat "$work/log.txt")"
}
expect_calls() {
  local want
  want=$(printf '%s\n' "$@")
  [ "$(cat "$FAKE_SANITIZER_CALLS")" = "$want" ] ||
    fail "calls: $(tr '\n' ';' <"$FAKE_SANITIZER_CALLS"), not $(tr '\n' ';' <<<"$want")"
}

# Stage 3 passed (no kernels.txt): the attention opcodes.
stage 0
expect_calls "memcheck attention bf16" "memcheck attention_qkv bf16" \
  "memcheck attention_lse bf16" "memcheck attention_grad bf16" \
  "memcheck attention_qkv_grad bf16" \
  "racecheck attention bf16" "racecheck attention_grad bf16" \
  "synccheck attention bf16" "synccheck attention_grad bf16"
[ "$(grep -c '^sanitize: .*: 0 errors (exit 0)$' "$work/log.txt")" = 9 ] ||
  fail "not 9 clean lines: $(cat "$work/log.txt")"

# Stage 3 failed two opcodes: memcheck on those, both dtypes.
cat >"$OUT/kernels.txt" <<'EOF'
tpcrt-device-check: cuda against cpu, seed 1, dtype all
PASS embedding              f32       err 0.000e+00 tol exact  table[203,96] ids[2,37]
FAIL layer_norm             f32       err 3.000e-01 tol 1e-05  x[2,37,96]
FAIL attention              bf16      err 5.000e-01 tol 1e-02  q[2,4,70,64]
FAIL layer_norm             bf16      err 3.000e-01 tol 1e-02  x[2,37,96]
EOF
stage 0
expect_calls "memcheck attention all" "memcheck layer_norm all" \
  "racecheck attention bf16" "racecheck attention_grad bf16" \
  "synccheck attention bf16" "synccheck attention_grad bf16"

# A sanitizer error fails the stage and is named.
FAKE_SANITIZER_ERRORS="racecheck:attention_grad" stage 1
grep -q '^sanitize: racecheck attention_grad (bf16): 1 errors (exit 9)$' \
  "$work/log.txt" || fail "no error line: $(cat "$work/log.txt")"

# No compute-sanitizer: skipped.
if ! command -v compute-sanitizer >/dev/null &&
   [ ! -x /usr/local/cuda/bin/compute-sanitizer ]; then
  bash "$check" --stage sanitize >"$work/log.txt" 2>&1
  rc=$?
  [ "$rc" -eq 77 ] || fail "without a sanitizer: exit $rc, not 77"
fi

echo "sanitize-stage.sh: $failures failures"
[ "$failures" -eq 0 ]
