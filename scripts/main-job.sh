#!/usr/bin/env bash
# The main job: set up and build (scripts/setup.sh), then import a small GPT-2,
# summarize it, compile it into an executable and run its forward pass and loss
# on the CPU, printing the loss and the planned and measured memory. It grows as
# the compiler does (training, multi-rank meshes).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh

BIN=build/bin
OUT=build/main-job
mkdir -p "$OUT"

echo "== tpc-import examples/configs/gpt2-tiny.json (batch 4, seq 32)"
"$BIN/tpc-import" examples/configs/gpt2-tiny.json --batch 4 --seq 32 \
  -o "$OUT/gpt2-tiny.mlir"
echo "wrote $OUT/gpt2-tiny.mlir"

echo "== tpc-opt --verify-each round trip"
"$BIN/tpc-opt" --verify-each "$OUT/gpt2-tiny.mlir" -o "$OUT/gpt2-tiny.roundtrip.mlir"
cmp "$OUT/gpt2-tiny.mlir" "$OUT/gpt2-tiny.roundtrip.mlir"
echo "round trip: identical"

echo "== summary"
"$BIN/tpc-opt" "$OUT/gpt2-tiny.mlir" --tpc-model-summary -o /dev/null

echo "== tpc-compile (forward + loss; static memory plan)"
"$BIN/tpc-compile" "$OUT/gpt2-tiny.mlir" -o "$OUT/gpt2-tiny.tpcx"

echo "== tpc-run on the CPU (weights from --init-seed, a synthetic batch)"
"$BIN/tpc-run" "$OUT/gpt2-tiny.tpcx" --init-seed 1 --synthetic-seed 1 \
  --trace "$OUT/gpt2-tiny.trace.json"
echo "kernel trace: $OUT/gpt2-tiny.trace.json (chrome://tracing or ui.perfetto.dev)"
