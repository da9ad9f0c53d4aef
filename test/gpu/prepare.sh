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
t0=$(date +%s)
compile() { # name config import-flags... -- compile-flags...
  local name=$1 config=$2; shift 2
  local imp=() comp=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do imp+=("$1"); shift; done
  shift
  comp=("$@")
  local s=$(date +%s)
  "$bin/tpc-import" "$config" "${imp[@]}" -o "$m/$name.mlir"
  "$bin/tpc-compile" "$m/$name.mlir" -o "$m/$name.tpcx" --train \
    --report "$m/$name.report.json" "${comp[@]}" 2>"$m/$name.compile.txt"
  rm -f "$m/$name.mlir"
  echo "compiled $name in $(( $(date +%s) - s )) s: $(cat "$m/$name.compile.txt")"
}

# Tiny configs: GPT-2 with every dropout on; Llama with heads (6), head_dim
# (16) and kv heads (2) all different, so that a mix-up of any two shows.
cat >"$m/gpt2-tiny.json" <<'EOF'
{
  "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
  "vocab_size": 256, "n_positions": 64, "n_embd": 64, "n_layer": 2,
  "n_head": 4, "n_inner": null, "activation_function": "gelu_new",
  "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
  "layer_norm_epsilon": 1e-05, "initializer_range": 0.02,
  "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32"
}
EOF
cat >"$m/llama-tiny.json" <<'EOF'
{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 256, "hidden_size": 96, "intermediate_size": 256,
  "num_hidden_layers": 2, "num_attention_heads": 6,
  "num_key_value_heads": 2, "max_position_embeddings": 64,
  "hidden_act": "silu", "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "rope_scaling": null, "attention_bias": false, "attention_dropout": 0.0,
  "mlp_bias": false, "tie_word_embeddings": false,
  "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"
}
EOF
# The MFU model (benchmarks/cuda/gpt_step_torch.py has the same config).
cat >"$m/gpt2-mfu.json" <<'EOF'
{
  "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
  "vocab_size": 50257, "n_positions": 2048, "n_embd": 2048, "n_layer": 8,
  "n_head": 16, "n_inner": null, "activation_function": "gelu_new",
  "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
  "layer_norm_epsilon": 1e-05, "initializer_range": 0.02,
  "bos_token_id": 50256, "eos_token_id": 50256, "torch_dtype": "bfloat16"
}
EOF

# gpt2-tiny: AdamW with clipping and the cosine schedule, 2 microbatches
# (the actions and the gradient accumulation).
compile gpt2-tiny "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --grad-clip 1.0 --lr-schedule cosine \
  --warmup-steps 1 --decay-steps 10 --microbatches 2 --seed 5
# gpt2-tiny-bf16: the same step in bf16 with f32 master weights.
compile gpt2-tiny-bf16 "$m/gpt2-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
# llama-tiny: rotary, RMS norm, SwiGLU, grouped-query attention (no dropout
# in Llama).
compile llama-tiny "$m/llama-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5
# llama-tiny-bf16: the same in bf16; its attention (no dropout, head_dim 16,
# grouped kv heads, causal) is what TPCRT_CUDA_ATTENTION=cudnn runs through
# cuDNN.
compile llama-tiny-bf16 "$m/llama-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
# The MFU model: batch 8 x 2048 tokens.
compile gpt2-mfu "$m/gpt2-mfu.json" --batch 8 --seq 2048 --dtype bf16 -- \
  --optimizer adamw --lr 1e-4 --seed 5
echo "models compiled in $(( $(date +%s) - t0 )) s"

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
