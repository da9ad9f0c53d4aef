#!/bin/sh
# Usage: pipeline-runs.sh BIN_DIR MODEL.mlir DIR STEPS [NAME:FLAGS...]
#
# Compiles MODEL.mlir with --train and each NAME's tpc-compile FLAGS (quoted,
# e.g. "1f1b-m4:--mesh pp=2 --microbatches 4 --schedule 1f1b"), runs STEPS
# steps of it on as many ranks as its mesh has (tpc-run --ranks) from the
# same initial weights and synthetic batch, and writes DIR/NAME.log (the
# step lines) and DIR/NAME.safetensors (the first step's gradients). Exits
# non-zero at the first failure, saying which.
set -e
bin=$1 model=$2 dir=$3 steps=$4
shift 4
for run in "$@"; do
  name=${run%%:*} flags=${run#*:}
  ranks=1
  for size in $(echo "$flags" | sed -n 's/.*--mesh \([^ ]*\).*/\1/p' | tr ',' ' '); do
    ranks=$((ranks * ${size#*=}))
  done
  # shellcheck disable=SC2086
  "$bin/tpc-compile" "$model" -o "$dir/$name.tpcx" --train --seed 11 $flags \
    2> "$dir/$name.compile.err" || { cat "$dir/$name.compile.err"; echo "$name: compile failed"; exit 1; }
  env OPENBLAS_NUM_THREADS=1 "$bin/tpc-run" "$dir/$name.tpcx" --ranks "$ranks" \
    --init-seed 3 --synthetic-seed 4 --steps "$steps" \
    --dump-grads "$dir/$name.safetensors" > "$dir/$name.log" 2> "$dir/$name.err" \
    || { cat "$dir/$name.err"; echo "$name: run failed"; exit 1; }
done
