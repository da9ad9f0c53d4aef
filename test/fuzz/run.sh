#!/bin/sh
# Runs tpc's fuzzers (test/fuzz/README.md).
#
#   test/fuzz/run.sh [SECONDS] [NAME...]
#       Each fuzzer NAME (config, mlir; all by default) for SECONDS (600 by
#       default) from its seeds and its corpus kept in the build
#       ($TPC_FUZZ_BUILD, default build/, under test/fuzz/work/NAME/corpus:
#       it grows from run to run). TPC_FUZZ_JOBS=N runs N fuzzing processes
#       per fuzzer (libFuzzer -fork=N; default 1).
#   test/fuzz/run.sh --ctest FUZZER SEEDS WORKDIR SECONDS
#       What ctest's fuzz.<name> runs: FUZZER for SECONDS from SEEDS and a
#       fresh scratch corpus in WORKDIR.
# Both pass test/fuzz/NAME.dict to the fuzzer as its dictionary.
#
# A fuzzer stops at its first finding. A finding is tpc's when its stack has
# a frame in tpc's code (a source file outside /usr and outside test/fuzz:
# the dialects, lib/, the code TableGen generated from tpc's .td files, the
# runtime's) or when the fuzzer's own checks abort (tpc-fuzz-<name>: ...).
# Others (a crash, timeout or out-of-memory wholly inside LLVM or MLIR) are
# upstream's: they are reported and fuzzing resumes for the time left.
# Exit status 1 when a finding is tpc's (its input is kept under WORKDIR's
# artifacts/), else 0.
set -u

fuzz_root=$(cd "$(dirname "$0")" && pwd)
source_root=$(cd "$fuzz_root/../.." && pwd)
upstream_limit=20

# classify LOG: prints "tpc" or "upstream" for the finding in LOG.
classify() {
  awk -v harness="$fuzz_root/" '
    /tpc-fuzz-(config|mlir): / { tpc = 1 }
    # A frame: "#N 0x... in FUNCTION FILE:LINE[:COL]". Frames below the
    # harness (libFuzzer, main) are not looked at.
    /^ *#[0-9]+ 0x[0-9a-f]+ in / {
      if ($1 == "#0") below = 0
      if (below) next
      if ($0 ~ /LLVMFuzzerTestOneInput| in fuzzer::/) { below = 1; next }
      file = $NF
      sub(/:[0-9]+(:[0-9]+)?$/, "", file)
      if (file !~ /^\// || file ~ /^\/usr\// || index(file, harness) == 1)
        next
      tpc = 1
    }
    END { print tpc ? "tpc" : "upstream" }' "$1"
}

# fuzz_one NAME FUZZER SEEDS WORKDIR SECONDS FRESH
fuzz_one() {
  name=$1 fuzzer=$2 seeds=$3 work=$4 seconds=$5 fresh=$6
  if [ ! -x "$fuzzer" ]; then
    echo "fuzz.$name: $fuzzer is not built" >&2
    return 1
  fi
  [ "$fresh" = yes ] && rm -rf "$work/corpus"
  mkdir -p "$work/corpus" "$work/artifacts" || return 1
  options=""
  [ "${TPC_FUZZ_JOBS:-1}" -gt 1 ] && options="-fork=$TPC_FUZZ_JOBS"
  [ -f "$fuzz_root/$name.dict" ] && options="$options -dict=$fuzz_root/$name.dict"
  total_runs=0 start=$(date +%s) upstream=0 status=0 attempt=0
  while :; do
    now=$(date +%s)
    left=$((seconds - (now - start)))
    [ "$left" -ge 1 ] || break
    attempt=$((attempt + 1))
    log="$work/log.$attempt"
    # shellcheck disable=SC2086
    "$fuzzer" -max_total_time="$left" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts/" $options \
      "$work/corpus" "$seeds" > "$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    total_runs=$((total_runs + ${runs:-0}))
    [ "$rc" -eq 0 ] && break
    artifact=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    if ! grep -q 'ERROR: \|runtime error:\|tpc-fuzz-\|Test unit written' \
        "$log"; then
      echo "fuzz.$name: the fuzzer failed (exit status $rc) without a" \
           "finding:" >&2
      tail -20 "$log" >&2
      status=1
      break
    fi
    kind=$(classify "$log")
    echo "---- fuzz.$name: finding (exit status $rc), input ${artifact:-?}"
    sed -n '/ERROR: \|runtime error:\|tpc-fuzz-\|^ *#[0-9][0-9]* 0x/p' "$log" |
      grep -v ' in fuzzer::\| in main \| in __libc_start\| in _start ' |
      head -60
    if [ "$kind" = tpc ]; then
      echo "---- fuzz.$name: the finding is in tpc's code (log: $log)"
      status=1
      break
    fi
    upstream=$((upstream + 1))
    echo "---- fuzz.$name: the finding is inside LLVM/MLIR, not tpc's code" \
         "(log: $log); fuzzing resumes"
    if [ "$upstream" -ge "$upstream_limit" ]; then
      echo "fuzz.$name: $upstream findings inside LLVM/MLIR: stopped"
      break
    fi
  done
  elapsed=$(($(date +%s) - start))
  corpus=$(find "$work/corpus" -type f | wc -l)
  verdict="no crash in tpc's code"
  [ "$status" -ne 0 ] && verdict="FAILED"
  echo "fuzz.$name: $total_runs executions in $elapsed s," \
       "$upstream finding(s) inside LLVM/MLIR, corpus $corpus inputs" \
       "($work/corpus): $verdict"
  return "$status"
}

if [ "${1:-}" = --ctest ]; then
  [ $# -eq 5 ] || { echo "usage: $0 --ctest FUZZER SEEDS WORKDIR SECONDS" >&2
                    exit 2; }
  name=$(basename "$2" | sed 's/^tpc-fuzz-//')
  fuzz_one "$name" "$2" "$3" "$4" "$5" yes
  exit $?
fi

seconds=600
case "${1:-}" in
  ''|*[!0-9]*) ;;
  *) seconds=$1; shift ;;
esac
names=${*:-config mlir}
build=${TPC_FUZZ_BUILD:-$source_root/build}
status=0
for name in $names; do
  fuzz_one "$name" "$build/test/fuzz/standalone/tpc-fuzz-$name" \
    "$fuzz_root/corpus/$name" "$build/test/fuzz/work/$name" "$seconds" no ||
    status=1
done
exit "$status"
