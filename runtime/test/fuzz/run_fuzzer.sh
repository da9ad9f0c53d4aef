#!/bin/sh
# run_fuzzer.sh [--fresh] FUZZER SEEDS WORKDIR SECONDS [LIBFUZZER-FLAG...]
#
# Runs one libFuzzer target of the runtime's file readers for SECONDS on the
# seed corpus SEEDS (read, never written) and WORKDIR/corpus, where new
# inputs go (created and filled with the seeds when missing; --fresh starts
# it again from the seeds). A crash, leak, sanitizer report or timeout
# leaves the input in WORKDIR/artifacts/ and fails (exit 1); the libFuzzer
# log is WORKDIR/fuzz.log. Used by the fuzz.* ctest entries and by run.sh.
# See test/fuzz/README.md.
set -u

fresh=0
if [ "${1:-}" = "--fresh" ]; then
  fresh=1
  shift
fi
if [ $# -lt 4 ]; then
  echo "usage: $0 [--fresh] FUZZER SEEDS WORKDIR SECONDS [FLAG...]" >&2
  exit 2
fi
fuzzer=$1 seeds=$2 work=$3 seconds=$4
shift 4
name=$(basename "$fuzzer")

if [ ! -x "$fuzzer" ]; then
  echo "$name: no fuzzer at $fuzzer (build the tpcrt-fuzzers target)" >&2
  exit 1
fi
if [ ! -d "$seeds" ]; then
  echo "$name: no seed corpus at $seeds" >&2
  exit 1
fi
[ "$fresh" = 1 ] && rm -rf "$work/corpus" "$work/artifacts"
mkdir -p "$work/corpus" "$work/artifacts" || exit 1
touch "$work/started"
if [ -z "$(ls -A "$work/corpus")" ]; then
  cp "$seeds"/* "$work/corpus/" 2>/dev/null
fi

# Sanitizer reports abort with a stack; leaks are reported (libFuzzer's
# -detect_leaks is on by default under ASan). The caller's settings win.
: "${UBSAN_OPTIONS:=print_stacktrace=1:halt_on_error=1}"
export UBSAN_OPTIONS

# -error_exitcode: libFuzzer's default (77) is ctest's "skipped".
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" "$@" \
  "$work/corpus" "$seeds" >"$work/fuzz.log" 2>&1
rc=$?

done_line=$(grep -E '^Done [0-9]+ runs' "$work/fuzz.log" | tail -n 1)
corpus=$(ls "$work/corpus" | wc -l)
if [ $rc -eq 0 ] && [ -n "$done_line" ]; then
  echo "$name: $done_line; corpus $corpus inputs ($work/corpus)"
  exit 0
fi
echo "$name: FAILED (exit $rc); the last lines of $work/fuzz.log:"
tail -n 60 "$work/fuzz.log"
found=$(find "$work/artifacts" -type f -newer "$work/started" 2>/dev/null)
if [ -n "$found" ]; then
  echo "$name: inputs left by this run:"
  for f in $found; do echo "  $f"; done
  echo "reproduce with: $fuzzer <input>; once fixed, add the input to $seeds"
fi
exit 1
