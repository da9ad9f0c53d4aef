#!/usr/bin/env bash
# The main job: set up and build (scripts/setup.sh), then import a small GPT-2
# and summarize it. It grows as the compiler does (compile, run on CPU ranks,
# print loss and memory).
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
