# run_helpers.sh: what the shell tests of tpc-run share (sourced, not run).
#
#   require_mpiexec            exits 77 (skipped) without mpiexec on PATH
#   fresh_dir DIR              empties DIR (made if missing) and enters it
#   fail WHAT...               prints FAIL: WHAT, counts it in $failures
#   now_ms                     milliseconds since the epoch
#   rank_pids PATTERN          pids of the tpc-run ranks whose command line
#                              holds PATTERN (the launcher, named
#                              tpc-launcher once it has started mpiexec, is
#                              not one)
#   wait_for_step K [FILE]     waits up to 30 s for `step K ` in FILE
#                              (default out.txt); status 1 if it never comes.
#                              Remove FILE before starting the run: a job
#                              started with `>FILE &` truncates it only when
#                              its shell gets to run, so an earlier run's
#                              FILE can answer first
#   wait_gone PID TENTHS       waits up to TENTHS/10 s for PID to end;
#                              status 1 if it still runs

failures=0

require_mpiexec() {
  if ! command -v mpiexec >/dev/null 2>&1; then
    echo "no mpiexec on PATH: skipped"
    exit 77
  fi
}

fresh_dir() {
  rm -rf "$1" && mkdir -p "$1" && cd "$1" || exit 1
}

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

now_ms() {
  echo $(($(date +%s%N) / 1000000))
}

rank_pids() {
  ps -eo pid=,comm=,args= | grep -F -- "$1" | grep -v grep |
    awk '$2 == "tpc-run" { print $1 }'
}

wait_for_step() {
  wait_i=0
  while ! grep -q "^step $1 " "${2:-out.txt}" 2>/dev/null; do
    wait_i=$((wait_i + 1))
    [ "$wait_i" -lt 300 ] || return 1
    sleep 0.1
  done
}

wait_gone() {
  wait_i=0
  while kill -0 "$1" 2>/dev/null; do
    wait_i=$((wait_i + 1))
    [ "$wait_i" -lt "$2" ] || return 1
    sleep 0.1
  done
}
