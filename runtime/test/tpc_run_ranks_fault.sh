#!/bin/sh
# tpc_run_ranks_fault.sh TPC_RUN RANKS_FIXTURES DIR
#
# A rank that fails takes every rank down within seconds, never a hang:
# tpc-run's fault injection (TPCRT_FAIL_RANK / TPCRT_FAIL_STEP /
# TPCRT_FAIL_KIND) makes one rank of `--ranks 2` fail with an error, or
# crash, at the start of step 2 while the other waits for it in the step's
# all_gather. Each run must end with a non-zero status in under 20 s and
# leave no rank behind. Exits 77 (skipped) without mpiexec on PATH.
set -u
run=$1
fixtures=$2
dir=$3
. "$(dirname "$0")/run_helpers.sh"
require_mpiexec
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$fixtures" write "$dir" || exit 1
cd "$dir" || exit 1
checks=0



# The ranks' command lines name this directory; none may outlive a run.
survivors() {
  ps -eo pid=,args= | grep -F "$dir/ranks2.tpcx" | grep -v grep
}

# inject RANK KIND EXPECTED_STDERR: run 5 steps with rank RANK failing at
# step 2.
inject() {
  checks=$((checks + 1))
  start=$(now_ms)
  TPCRT_FAIL_RANK=$1 TPCRT_FAIL_STEP=2 TPCRT_FAIL_KIND=$2 timeout -k 5 30 \
    "$run" "$dir/ranks2.tpcx" --ranks 2 --init-seed 1 --synthetic-seed 1 \
    --steps 5 >out.txt 2>err.txt
  rc=$?
  elapsed=$(($(now_ms) - start))
  what="rank $1 failing ($2)"
  if [ "$rc" -eq 0 ]; then
    fail "$what: exit status 0"
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "$what: still running after 30 s (hang)"
  fi
  [ "$elapsed" -lt 20000 ] || fail "$what: took $elapsed ms"
  if [ -n "$3" ]; then
    grep -qF -- "$3" err.txt || fail "$what: stderr lacks '$3': $(cat err.txt)"
  fi
  grep -q '^step 1 ' out.txt || fail "$what: step 1 did not run: $(cat out.txt)"
  grep -q '^step [345] ' out.txt && fail "$what: steps ran on after the failure: $(cat out.txt)"
  sleep 1
  if survivors >/dev/null; then
    fail "$what: ranks left running: $(survivors)"
  fi
  echo "$what: exit status $rc after $elapsed ms"
}

inject 1 error "error: rank 1: step 2: injected failure (TPCRT_FAIL_RANK=1 TPCRT_FAIL_STEP=2)"
inject 0 error "error: rank 0: step 2: injected failure (TPCRT_FAIL_RANK=0 TPCRT_FAIL_STEP=2)"
inject 1 crash ""

# One rank: the plain error line and status 1.
checks=$((checks + 1))
TPCRT_FAIL_RANK=0 TPCRT_FAIL_STEP=1 "$run" twin.tpcx --init-seed 1 \
  --synthetic-seed 1 >out.txt 2>err.txt
rc=$?
# Less the note of a forward run on whether it applies dropout.
grep -v '^tpc-run: the forward pass ' err.txt >err.rest; mv err.rest err.txt
[ "$rc" -eq 1 ] && [ "$(cat err.txt)" = "error: step 1: injected failure (TPCRT_FAIL_RANK=0 TPCRT_FAIL_STEP=1)" ] ||
  fail "one rank: status $rc, $(cat err.txt)"
checks=$((checks + 1))
TPCRT_FAIL_RANK=0 TPCRT_FAIL_STEP=1 TPCRT_FAIL_KIND=later "$run" twin.tpcx \
  --init-seed 1 --synthetic-seed 1 >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 1 ] && [ "$(cat err.txt)" = "error: TPCRT_FAIL_KIND 'later': expected error or crash" ] ||
  fail "a bad TPCRT_FAIL_KIND: status $rc, $(cat err.txt)"

echo "tpc_run_ranks_fault.sh: $checks runs, $failures failed"
[ "$failures" -eq 0 ]
