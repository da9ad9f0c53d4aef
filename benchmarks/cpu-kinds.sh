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
# prediction (measured ms, predicted ms, measured/predicted).
#
# Then the description calibrated on the run with dropout (report.py
# trace-ops --calibrate: its memory-bound kinds' fractions fitted to that
# trace) is checked on another model: a GPT-2 of hidden 384, 6 heads of
# 64, 3 layers, seq 256, batch 4, vocabulary 3000, dropout 0.1, compiled
# with CPU_JSON and with the calibrated description; one line each,
# measured/predicted over all kernels and the largest kinds. One run: the
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
# gpt2_config FILE VOCAB POSITIONS HIDDEN LAYERS HEADS: a GPT-2 config,
# dropout 0.1 everywhere (tpc-import --dropout overrides it).
gpt2_config() {
  cat >"$1" <<JSON
{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
 "vocab_size": $2, "n_positions": $3, "n_embd": $4, "n_layer": $5,
 "n_head": $6, "activation_function": "gelu_new", "resid_pdrop": 0.1,
 "embd_pdrop": 0.1, "attn_pdrop": 0.1, "layer_norm_epsilon": 1e-5,
 "initializer_range": 0.02}
JSON
}
gpt2_config "$dir/gpt2-config.json" 2048 128 256 4 8
gpt2_config "$dir/other-config.json" 3000 256 384 3 6
export OPENBLAS_NUM_THREADS=1
# compile_and_trace NAME CONFIG DESCRIPTION IMPORT_FLAGS...: NAME.tpcx, its
# report NAME.json and the trace of 3 steps NAME.trace.json.
# (sh has no locals: the names are the function's own.)
compile_and_trace() {
  ct_name=$dir/$1 ct_config=$2 ct_hw=$3
  shift 3
  "$bin/tpc-import" "$ct_config" "$@" -o "$ct_name.mlir"
  "$bin/tpc-compile" "$ct_name.mlir" --train -o "$ct_name.tpcx" \
    --report "$ct_name.json" --hardware "$ct_hw" 2>/dev/null
  "$bin/tpc-run" "$ct_name.tpcx" --init-seed 1 --synthetic-seed 1 \
    --steps 3 --trace "$ct_name.trace.json" >/dev/null 2>&1
}
for dropout in 0 0.1; do
  compile_and_trace "gpt2-dropout-$dropout" "$dir/gpt2-config.json" "$hw" \
    --batch 8 --seq 128 --dropout "$dropout"
  echo "== dropout $dropout (hidden 256, 8 heads of 32, 4 layers, seq 128, batch 8; $hw)"
  python3 "$root/benchmarks/cuda/report.py" trace-ops \
    --trace "$dir/gpt2-dropout-$dropout.trace.json" \
    --report "$dir/gpt2-dropout-$dropout.json" --top 0 |
    grep -v '^the 0 slowest'
done
echo "== calibrated on the run with dropout 0.1"
python3 "$root/benchmarks/cuda/report.py" trace-ops \
  --trace "$dir/gpt2-dropout-0.1.trace.json" \
  --report "$dir/gpt2-dropout-0.1.json" --top 0 \
  --calibrate "$hw" --write "$dir/calibrated.json" |
  grep -E '^(calibrated|left as)'
for description in "$hw" "$dir/calibrated.json"; do
  compile_and_trace other "$dir/other-config.json" "$description" \
    --batch 4 --seq 256 --dropout 0.1
  echo "== another model (hidden 384, 6 heads of 64, 3 layers, seq 256, batch 4, vocabulary 3000, dropout 0.1) on $(basename "$description")"
  python3 "$root/benchmarks/cuda/report.py" trace-ops \
    --trace "$dir/other.trace.json" --report "$dir/other.json" --top 0 |
    grep '^measured/predicted'
done
rm -rf "$dir"
