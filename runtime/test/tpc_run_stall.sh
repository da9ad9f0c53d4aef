#!/bin/sh
# tpc_run_stall.sh TPC_RUN RANKS_FIXTURES DIR
#
# A rank that stops without dying never hangs the run (issue 18, tpc-run
# --timeout): one rank of `--ranks 2` is stopped (SIGSTOP) while training;
# the other, waiting for it in a collective, ends the run within the timeout
# plus a few seconds with `no progress for T s` naming the step, kernel,
# operation and group, a non-zero status, and no rank left behind. A rank
# that is only slow (stopped for less than the timeout, then continued) is
# not killed: that run finishes with status 0. Exits 77 (skipped) without
# mpiexec on PATH.
set -u
run=$1
fixtures=$2
dir=$3
. "$(dirname "$0")/run_helpers.sh"
require_mpiexec
fresh_dir "$dir"
"$fixtures" write "$dir" || exit 1

ranks() {
  rank_pids "$dir/ranks2.tpcx"
}

cleanup() {
  for pid in $(ranks); do
    kill -CONT "$pid" 2>/dev/null
    kill -KILL "$pid" 2>/dev/null
  done
}

# 1. A stopped rank: the run ends within the timeout plus a few seconds.
rm -f out.txt err.txt # not the previous run's step lines
"$run" "$dir/ranks2.tpcx" --ranks 2 --init-seed 1 --synthetic-seed 1 \
  --steps 100000000 --timeout 3 >out.txt 2>err.txt &
job=$!
if wait_for_step 3; then
  victim=$(ranks | tail -1)
  start=$(now_ms)
  kill -STOP "$victim"
  # At most timeout (3 s) + 10 s.
  wait_gone "$job" 130
  elapsed=$(($(now_ms) - start))
  if kill -0 "$job" 2>/dev/null; then
    fail "stopped rank: the run still hangs $elapsed ms after SIGSTOP"
    kill -KILL "$job" 2>/dev/null
    cleanup
  else
    wait "$job"
    rc=$?
    [ "$rc" -ne 0 ] || fail "stopped rank: exit status 0"
    [ "$elapsed" -ge 2500 ] || fail "stopped rank: ended after $elapsed ms, before the 3 s timeout"
    grep -q 'error: rank [01]: step [0-9]*, kernel [0-9]* ([a-z_]*) [a-z_ ]* over \[tp\]: no progress for 3 s' err.txt ||
      fail "stopped rank: stderr lacks the watchdog's message: $(cat err.txt)"
    echo "stopped rank: exit status $rc after $elapsed ms: $(grep 'no progress' err.txt | head -1)"
  fi
else
  fail "stopped rank: the run did not reach step 3: $(cat err.txt)"
  kill -KILL "$job" 2>/dev/null
fi
sleep 1
if [ -n "$(ranks)" ]; then
  fail "stopped rank: ranks left running: $(ranks)"
  cleanup
fi

# 2. A slow rank (stopped 1.5 s, under the 5 s timeout, then continued) is
# not killed: the run finishes.
rm -f out.txt err.txt # not the previous run's step lines
"$run" "$dir/ranks2.tpcx" --ranks 2 --init-seed 1 --synthetic-seed 1 \
  --steps 3000 --timeout 5 >out.txt 2>err.txt &
job=$!
if wait_for_step 3; then
  victim=$(ranks | tail -1)
  kill -STOP "$victim"
  sleep 1.5
  kill -CONT "$victim"
  wait "$job"
  rc=$?
  [ "$rc" -eq 0 ] || fail "slow rank: exit status $rc: $(cat err.txt)"
  grep -q '^step 3000 ' out.txt || fail "slow rank: the run did not finish its steps"
  echo "slow rank: exit status $rc, $(grep -c '^step ' out.txt) steps"
else
  fail "slow rank: the run did not reach step 3: $(cat err.txt)"
  kill -KILL "$job" 2>/dev/null
  cleanup
fi

# 3. A bad --timeout is refused.
"$run" "$dir/ranks2.tpcx" --init-seed 1 --synthetic-seed 1 --timeout -1 \
  >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 1 ] && grep -q "error: --timeout: '-1' is not a number of seconds" err.txt ||
  fail "--timeout -1: status $rc, $(cat err.txt)"

echo "tpc_run_stall.sh: $failures failed"
[ "$failures" -eq 0 ]
