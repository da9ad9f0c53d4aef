#!/bin/sh
# Usage: benchmarks/cpu-prediction.sh [BIN_DIR] [RUNS]
#
# Issue 16 on this machine: measures it (tpc-measure-hardware, the full
# measurement), then compiles ten small plans of one GPT-2 (1 or 2 ranks:
# one device, microbatches, full recomputation, unfused attention, batch
# 2/8/16, dp=2, tp=2, tp=2 with SP, pp=2) with --hardware on that
# description, runs each RUNS times (default 5) and prints predicted vs
# measured step time, checks every rank's measured peak against the
# predicted one, and checks that every pair of plans whose predicted times
# differ by 15% or more is measured in the same order (medians).
set -eu
bin=${1:-build/bin}
runs=${2:-5}
dir=$(mktemp -d "${TMPDIR:-/tmp}/cpu-prediction.XXXXXX")
"$bin/tpc-measure-hardware" -o "$dir/cpu.json"
python3 "$(dirname "$0")/../test/plan/check_cpu_prediction.py" "$bin" \
  "$dir/cpu.json" "$dir/work" "$runs" --check-order
