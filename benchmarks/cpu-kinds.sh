#!/bin/sh
# Usage: benchmarks/cpu-kinds.sh [BIN_DIR] [CPU_JSON]
#
# Where the compile's time model is right and wrong on this machine, kind
# of kernel by kind: one GPT-2 (hidden 256, 8 heads of 32, 4 layers, seq
# 128, batch 8; the model of benchmarks/cpu-prediction.sh) compiled with
# --report --hardware CPU_JSON (default BIN_DIR/../share/tpc/hardware/
# cpu.json, this machine measured by tpc-measure-hardware; measured first
# when it is missing), without dropout and with 0.1, each trained 3 steps
# by tpc-run --trace on one rank (OPENBLAS_NUM_THREADS=1: a device of the
# description is one core); then benchmarks/cuda/report.py trace-ops
# --report prints the last step's time per kind beside the replay's
# prediction (measured ms, predicted ms, measured/predicted). One run: the
# machine is noisy, read the ratios, not the milliseconds.
set -eu
bin=${1:-build/bin}
hw=${2:-$bin/../share/tpc/hardware/cpu.json}
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/cpu-kinds.XXXXXX")
if [ ! -f "$hw" ]; then
  echo "no $hw: measuring this machine (tpc-measure-hardware --quick)"
  "$bin/tpc-measure-hardware" --quick -o "$dir/cpu.json"
  hw=$dir/cpu.json
fi
cat >"$dir/gpt2.json" <<'JSON'
{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
 "vocab_size": 2048, "n_positions": 128, "n_embd": 256, "n_layer": 4,
 "n_head": 8, "activation_function": "gelu_new", "resid_pdrop": 0.1,
 "embd_pdrop": 0.1, "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5,
 "initializer_range": 0.02}
JSON
export OPENBLAS_NUM_THREADS=1
for dropout in 0 0.1; do
  name=$dir/gpt2-dropout-$dropout
  "$bin/tpc-import" "$dir/gpt2.json" --batch 8 --seq 128 --dropout "$dropout" \
    -o "$name.mlir"
  "$bin/tpc-compile" "$name.mlir" --train -o "$name.tpcx" \
    --report "$name.json" --hardware "$hw" 2>/dev/null
  "$bin/tpc-run" "$name.tpcx" --init-seed 1 --synthetic-seed 1 --steps 3 \
    --trace "$name.trace.json" >/dev/null 2>&1
  echo "== dropout $dropout (hidden 256, 8 heads of 32, 4 layers, seq 128, batch 8; $hw)"
  python3 "$root/benchmarks/cuda/report.py" trace-ops \
    --trace "$name.trace.json" --report "$name.json" --top 0 |
    grep -v '^the 0 slowest'
done
rm -rf "$dir"
