#!/bin/sh
# run.sh [SECONDS] [BUILD_DIR]
#
# Runs every fuzzer of the runtime's file readers (safetensors, executable,
# token_data) for SECONDS each (default 300), one after the other, from a
# build folder configured with the fuzzers (BUILD_DIR, default the current
# folder: the fuzzers are BUILD_DIR/fuzz/<name>_fuzzer). Each keeps its
# growing corpus in BUILD_DIR/fuzz/work/<name>/corpus between runs and
# leaves what it finds in BUILD_DIR/fuzz/work/<name>/artifacts/. Exits 1 when
# any of them failed. See test/fuzz/README.md.
set -u

seconds=${1:-300}
build=${2:-.}
here=$(cd "$(dirname "$0")" && pwd)
case $seconds in
  '' | *[!0-9]*)
    echo "usage: $0 [SECONDS] [BUILD_DIR]" >&2
    exit 2
    ;;
esac

status=0
for name in safetensors executable token_data; do
  fuzzer=$build/fuzz/${name}_fuzzer
  if [ ! -x "$fuzzer" ]; then
    echo "$name: no $fuzzer: configure the runtime with clang++ and libFuzzer" \
      "present (TPCRT_FUZZERS) and build it" >&2
    status=1
    continue
  fi
  echo "$name: fuzzing for $seconds s"
  sh "$here/run_fuzzer.sh" "$fuzzer" "$here/corpus/$name" \
    "$build/fuzz/work/$name" "$seconds" || status=1
done
exit $status
