#!/usr/bin/env bash
# test/gpu/models.sh BIN OUT [--mfu]: the four tiny training steps that
# test/gpu/device-check.sh's models stage runs on the CPU and the CUDA
# device (runtime.CudaEmulatedModels: through the emulated backend), the
# multi-rank ones of its ranks stage, and
# with --mfu the MFU model of its benchmark, compiled by BIN/tpc-import and
# BIN/tpc-compile into OUT/NAME.tpcx (NAME.json, NAME.report.json and
# NAME.compile.txt beside). No weights: tpc-run draws them (--init-seed),
# and the batches (--synthetic-seed).
set -euo pipefail
bin=$1
m=$2
mfu=${3:-}
mkdir -p "$m"
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
# twin NAME: NAME's float32 twin, NAME-f32.tpcx: the same model, mesh and
# flags without --dtype bf16 and bf16 reductions, the reference that
# model_pair (model-pair.sh) measures both devices' bf16 runs against where
# they differ by more than the tolerance.
source "$(dirname "$0")/twin-flags.sh"
twin() {
  local name=$1 config=$2; shift 2
  twin_flags "$@"
  compile "$name-f32" "$config" "${TWIN_FLAGS[@]}"
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
# gpt2-tiny: AdamW with clipping and the cosine schedule, 2 microbatches
# (the actions and the gradient accumulation).
compile gpt2-tiny "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --grad-clip 1.0 --lr-schedule cosine \
  --warmup-steps 1 --decay-steps 10 --microbatches 2 --seed 5
# gpt2-tiny-bf16: the same step in bf16 with f32 master weights.
# (--hardware h200: its report has the prediction the bench stage reads,
# for the emulated run of that stage.)
compile gpt2-tiny-bf16 "$m/gpt2-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --hardware h200
twin gpt2-tiny-bf16 "$m/gpt2-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
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
twin llama-tiny-bf16 "$m/llama-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
# The tiny models' heads (16) take the fp32 FMA attention kernels; these
# two take the tensor-core ones (bf16, head_dim 64 and 128: wgmma on a
# Hopper GPU), as the MFU model does. gpt2-d64-bf16: GPT-2's packed q, k, v
# (attention_qkv) with dropout everywhere, 4 heads of 64 over 128
# positions (two 64-row tiles). llama-d128-bf16: 4 heads of 128, 2 kv heads
# (heads, head_dim and kv heads all different), no attention dropout.
cat >"$m/gpt2-d64.json" <<'JSON'
{
  "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
  "vocab_size": 512, "n_positions": 128, "n_embd": 256, "n_layer": 2,
  "n_head": 4, "n_inner": null, "activation_function": "gelu_new",
  "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
  "layer_norm_epsilon": 1e-05, "initializer_range": 0.02,
  "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "bfloat16"
}
JSON
cat >"$m/llama-d128.json" <<'JSON'
{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 512, "hidden_size": 512, "intermediate_size": 768,
  "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "max_position_embeddings": 128,
  "hidden_act": "silu", "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "rope_scaling": null, "attention_bias": false, "attention_dropout": 0.0,
  "mlp_bias": false, "tie_word_embeddings": false,
  "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"
}
JSON
compile gpt2-d64-bf16 "$m/gpt2-d64.json" --batch 2 --seq 128 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
twin gpt2-d64-bf16 "$m/gpt2-d64.json" --batch 2 --seq 128 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
compile llama-d128-bf16 "$m/llama-d128.json" --batch 2 --seq 128 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
twin llama-d128-bf16 "$m/llama-d128.json" --batch 2 --seq 128 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5
# gpt2-v250-cuda: --target cuda pads the vocabulary (250) to 256 rows: the
# loss and its gradient over the first 250 columns of each row, gradients
# and checkpoints written without the padding.
sed 's/"vocab_size": 256/"vocab_size": 250/' "$m/gpt2-tiny.json" \
  >"$m/gpt2-v250.json"
compile gpt2-v250-cuda "$m/gpt2-v250.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --target cuda
# The same steps split over ranks (device-check.sh's ranks stage): the
# collectives, sequence parallelism, the vocabulary-split loss and the
# pipeline transfers on the CUDA device and NCCL.
# gpt2-tiny-dp2: data parallel, 2 microbatches (gradients summed over them,
# each reduced in the last one's backward).
compile gpt2-tiny-dp2 "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh dp=2 --microbatches 2
# gpt2-tiny-dp2-bf16-reduce: the gradients reduced in bf16 (cast, NCCL's
# bf16 sum, cast back).
compile gpt2-tiny-dp2-bf16-reduce "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh dp=2 --grad-reduce-dtype bf16
twin gpt2-tiny-dp2-bf16-reduce "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh dp=2 --grad-reduce-dtype bf16
# gpt2-tiny-tp2-sp: Megatron tensor parallelism with sequence parallelism
# (all-gather / reduce-scatter), the vocabulary split.
compile gpt2-tiny-tp2-sp "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh tp=2 --sequence-parallel
# gpt2-tiny-pp2: two pipeline stages, 1F1B over 4 microbatches (started
# transfers on the up and down communicators).
compile gpt2-tiny-pp2 "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh pp=2 --microbatches 4
# gpt2-tiny-pp2-zbh1: the zero-bubble schedule (W split from B).
compile gpt2-tiny-pp2-zbh1 "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh pp=2 --microbatches 4 \
  --schedule zb-h1
# gpt2-tiny-dp2-pp2: four ranks, the data-parallel reduction of a pipeline.
compile gpt2-tiny-dp2-pp2 "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh dp=2,pp=2 --microbatches 2
# llama-tiny-tp2-bf16: grouped kv heads split over tp, bf16 collectives.
compile llama-tiny-tp2-bf16 "$m/llama-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh tp=2
twin llama-tiny-tp2-bf16 "$m/llama-tiny.json" --batch 4 --seq 32 --dtype bf16 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh tp=2
# gpt2-tiny-dp2-tp2: four ranks, both axes.
compile gpt2-tiny-dp2-tp2 "$m/gpt2-tiny.json" --batch 4 --seq 32 -- \
  --optimizer adamw --lr 1e-3 --seed 5 --mesh dp=2,tp=2
# The ranks stage's list (device-check.sh stage_ranks; emulated-check.sh's
# allocations stage): NAME RANKS TOLERANCE.
cat >"$m/ranks.txt" <<'EOF'
gpt2-tiny-dp2 2 1e-4
gpt2-tiny-dp2-bf16-reduce 2 2e-2
gpt2-tiny-tp2-sp 2 1e-4
gpt2-tiny-pp2 2 1e-4
gpt2-tiny-pp2-zbh1 2 1e-4
llama-tiny-tp2-bf16 2 2e-2
gpt2-tiny-dp2-tp2 4 1e-4
gpt2-tiny-dp2-pp2 4 1e-4
EOF

if [ "$mfu" = --mfu ]; then
  # The MFU model (benchmarks/cuda/gpt_step_torch.py has the same config):
  # batch 8 x 2048 tokens.
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
  # --hardware h200: its report predicts the step (device-check.sh's 6c).
  # --target cuda: the vocabulary padded to 50304 rows (the LM head's
  # GEMMs on whole tiles; HF's model keeps 50257).
  compile gpt2-mfu "$m/gpt2-mfu.json" --batch 8 --seq 2048 --dtype bf16 -- \
    --optimizer adamw --lr 1e-4 --seed 5 --hardware h200 --target cuda
  # The same executable's prediction for an H100 (device-check.sh reads the
  # one for the GPU it runs on): its report alone.
  "$bin/tpc-import" "$m/gpt2-mfu.json" --batch 8 --seq 2048 --dtype bf16 \
    -o "$m/gpt2-mfu.mlir"
  "$bin/tpc-compile" "$m/gpt2-mfu.mlir" --train --optimizer adamw --lr 1e-4 \
    --seed 5 --target cuda --report "$m/gpt2-mfu.h100.report.json" \
    --hardware h100 2>/dev/null
  rm -f "$m/gpt2-mfu.mlir"
fi
echo "models compiled in $(( $(date +%s) - t0 )) s"
