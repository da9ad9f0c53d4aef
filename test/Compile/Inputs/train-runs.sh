#!/bin/sh
# Usage: train-runs.sh TPC-COMPILE MODEL.mlir DIR M...
#
# Compiles MODEL.mlir with --train --microbatches M for each M and runs three
# steps of it with tpc-run (beside tpc-compile) from the same initial weights
# and synthetic batch, writing DIR/mbM.log and the first step's gradients
# DIR/mbM.safetensors.
set -e
compile=$1 model=$2 dir=$3
shift 3
run=$(dirname "$compile")/tpc-run
for m in "$@"; do
  "$compile" "$model" -o "$dir/mb$m.tpcx" --train --microbatches "$m" --seed 11 2>/dev/null
  "$run" "$dir/mb$m.tpcx" --init-seed 3 --synthetic-seed 4 --steps 3 \
    --dump-grads "$dir/mb$m.safetensors" > "$dir/mb$m.log"
done
