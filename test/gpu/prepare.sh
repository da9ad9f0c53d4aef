#!/usr/bin/env bash
# test/gpu/prepare.sh: fills gpu-carry/ (ignored) with what the GPU machine
# lacks, for test/gpu/device-check.sh (README.md beside this):
#
#   include/      the FlatBuffers and nlohmann::json headers (the GPU machine
#                 has none of the Debian libraries)
#   cudnn/include/ cuDNN's headers (the toolkit's), for the fused attention
#   generated/    tpcx_generated.h, made by this machine's flatc from
#                 runtime/schema/tpcx.fbs (it insists on the FlatBuffers
#                 version of the headers beside it)
#   models/       executables compiled here by tpc-import / tpc-compile (no
#                 MLIR there): four tiny training steps for the CPU-vs-CUDA
#                 comparison and the MFU model (GPT-2 2048x16x8, seq 2048,
#                 bf16 with f32 master weights, AdamW, dropout 0.1). No
#                 weights: tpc-run draws them there (--init-seed), and the
#                 batches (--synthetic-seed).
#
# Usage: test/gpu/prepare.sh [--bin DIR] [--out DIR]
#   --bin  the compiler's tools (default: build/bin)
#   --out  the folder to fill (default: gpu-carry)
# Run from anywhere; paths are taken relative to the repository root.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/bin
out=$root/gpu-carry
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$(cd "$2" && pwd); shift 2 ;;
    --out) mkdir -p "$2"; out=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "prepare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for tool in tpc-import tpc-compile; do
  [ -x "$bin/$tool" ] || { echo "prepare.sh: no $bin/$tool (build tpc first)" >&2; exit 1; }
done

rm -rf "$out/include" "$out/generated" "$out/models" "$out/cudnn"
mkdir -p "$out/include" "$out/generated" "$out/models"

# --- headers -----------------------------------------------------------------
for dir in flatbuffers nlohmann; do
  [ -d /usr/include/$dir ] || { echo "prepare.sh: no /usr/include/$dir" >&2; exit 1; }
  cp -r /usr/include/$dir "$out/include/"
done

# cuDNN's headers (the graph API's: the CUDA backend's fused attention), where
# the toolkit has them; the GPU machine has cuDNN's library in a wheel.
if [ -f /usr/local/cuda/include/cudnn_graph.h ]; then
  mkdir -p "$out/cudnn/include"
  cp /usr/local/cuda/include/cudnn*.h "$out/cudnn/include/"
fi

# --- the schema header ---------------------------------------------------------
# From the working tree's schema with the runtime's own flatc flags
# (runtime/CMakeLists.txt), else the newest one a build made.
if command -v flatc >/dev/null; then
  flatc --cpp --scoped-enums --gen-object-api -o "$out/generated" \
    "$root/runtime/schema/tpcx.fbs"
else
  found=$(find "$root/build" -name tpcx_generated.h -newer \
            "$root/runtime/schema/tpcx.fbs" -print 2>/dev/null | head -n 1)
  [ -n "$found" ] || { echo "prepare.sh: no flatc and no tpcx_generated.h newer than the schema" >&2; exit 1; }
  cp "$found" "$out/generated/"
fi

# --- models --------------------------------------------------------------------
m=$out/models
bash "$root/test/gpu/models.sh" "$bin" "$m" --mfu

# --- sizes ---------------------------------------------------------------------
echo "== gpu-carry sizes"
for d in include generated models cudnn; do
  [ -d "$out/$d" ] && du -sh "$out/$d"
done
ls -l "$m"/*.tpcx
total=$(du -sk "$out" | cut -f1)
if [ "$total" -gt $((60 * 1024)) ]; then
  echo "prepare.sh: gpu-carry is $total KiB, over the 60 MiB budget" >&2
  exit 1
fi
echo "gpu-carry: $total KiB (carry limit 64 MiB with the working tree)"
