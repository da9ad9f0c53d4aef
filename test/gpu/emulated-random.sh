#!/usr/bin/env bash
# test/gpu/emulated-random.sh BUILD WORK [SEED [COUNT]]: COUNT (default 10)
# training configurations drawn at random from SEED (default 1): model
# (GPT-2 or Llama, sizes with no two alike where they can differ: heads,
# head_dim, kv heads, layers, vocabulary, sequence, batch), element type,
# mesh (dp, tp, pp on up to 4 ranks; sequence and vocabulary parallelism),
# pipeline schedule, microbatches, recomputation, optimizer, clipping, the
# learning-rate schedule, the reductions' element type and the target
# (--target cuda pads the vocabulary). Each is compiled
# and run for two steps on the CPU and on the CUDA backend compiled for the
# host (libtpcrt-cuda-emulated.so, NCCL emulated between ranks), compared by
# device-check.sh's model_pair (fp32 1e-4, bf16 2e-2). Prints one line per
# configuration (ok / FAIL / refused: a configuration the compiler refuses
# with its message, not a failure) and its flags; exit 1 where one failed.
# For exploring beyond the fixed lists (emulated-configs.sh); ctest runs a
# few (runtime.CudaEmulatedRandom). Not a GPU run.
set -euo pipefail
source "$(dirname "$0")/emulated-setup.sh" "$1" "$2"
seed=${3:-1}
count=${4:-10}
export TPCRT_CUDA_BACKEND=$backend TPCRT_NCCL_LIBRARY=$backend \
  TPCRT_NCCL_EMULATION_DIR=$work/nccl
# model_pair (device-check.sh's comparison) reads these.
BUILD=$build CARRY=$work WORK=$work/dumps DUT=cuda PY=python3
TPC_GPU_RUN_TIMEOUT=120
source "$root/test/gpu/model-pair.sh"
source "$root/test/gpu/twin-flags.sh"
mkdir -p "$work/models"

# One configuration per line: NAME RANKS TOL IMPORT-FLAGS -- COMPILE-FLAGS,
# its config written to WORK/models/NAME.json.
python3 - "$work/models" "$seed" "$count" >"$work/cases.txt" <<'EOF'
import json, random, sys
out, seed, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
# The target from a stream of its own, so that the draws above keep the
# configurations they gave before it was drawn.
targets = random.Random(seed + 1000)
for i in range(count):
    llama = rng.random() < 0.5
    tp = rng.choice([1, 1, 2])
    pp = rng.choice([1, 1, 2])
    dp = rng.choice([1, 2]) if tp * pp <= 2 else 1
    ranks = dp * tp * pp
    head_dim = rng.choice([8, 16, 32])
    heads = rng.choice([h for h in (2, 3, 4, 6) if h % tp == 0])
    hidden = heads * head_dim
    layers = rng.choice([1, 2, 3, 4]) if pp == 1 else rng.choice([2, 4])
    vocab = rng.choice([61, 128, 200, 255])
    seq = rng.choice([8, 12, 16, 24, 40])
    micro = rng.choice([1, 2, 4]) if pp == 1 else rng.choice([2, 4])
    batch = micro * dp * rng.choice([1, 2])
    bf16 = rng.random() < 0.4
    if llama:
        kv = rng.choice([k for k in range(1, heads + 1)
                         if heads % k == 0 and k % tp == 0])
        config = {
            "architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": vocab, "hidden_size": hidden,
            "intermediate_size": rng.choice([2, 3]) * hidden + 8 * tp,
            "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "max_position_embeddings": 64,
            "hidden_act": "silu", "rms_norm_eps": 1e-6,
            "rope_theta": 10000.0, "rope_scaling": None,
            "attention_bias": False, "attention_dropout": 0.0,
            "mlp_bias": False,
            "tie_word_embeddings": rng.random() < 0.3,
            "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32"}
    else:
        p = rng.choice([0.0, 0.1, 0.2])
        config = {
            "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
            "vocab_size": vocab, "n_positions": 64, "n_embd": hidden,
            "n_layer": layers, "n_head": heads, "n_inner": None,
            "activation_function": rng.choice(["gelu_new", "gelu"]),
            "resid_pdrop": p, "embd_pdrop": p, "attn_pdrop": p,
            "layer_norm_epsilon": 1e-5, "initializer_range": 0.02,
            "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float32"}
    name = f"r{seed}-{i}"
    json.dump(config, open(f"{out}/{name}.json", "w"), indent=1)
    imp = ["--batch", str(batch), "--seq", str(seq)]
    if bf16:
        imp += ["--dtype", "bf16"]
    if rng.random() < 0.25:
        imp += ["--attention", "unfused"]
    comp = ["--microbatches", str(micro)]
    if ranks > 1:
        comp += ["--mesh", ",".join(f"{a}={n}" for a, n in
                                   (("dp", dp), ("tp", tp), ("pp", pp))
                                   if n > 1)]
    if tp > 1 and rng.random() < 0.5:
        comp.append("--sequence-parallel")
    if tp > 1 and rng.random() < 0.3:
        comp.append("--vocab-parallel=false")
    if pp > 1:
        schedules = ["1f1b", "zb-h1", "gpipe"]
        if micro % pp == 0 and layers % (2 * pp) == 0:
            schedules += ["interleaved-1f1b", "zb-v"]
        comp += ["--schedule", rng.choice(schedules)]
        if rng.random() < 0.25:
            comp.append("--blocking-transfers")
    comp += ["--remat", rng.choice(["none", "none", "full", "selective"])]
    if rng.random() < 0.3:
        comp += ["--optimizer", "sgd", "--momentum",
                 rng.choice(["0", "0.9"]), "--lr", "1e-2"]
    else:
        comp += ["--optimizer", "adamw", "--lr", "1e-3"]
    if rng.random() < 0.4:
        comp += ["--grad-clip", "0.5"]
    if rng.random() < 0.3:
        comp += ["--lr-schedule", "cosine", "--warmup-steps", "1",
                 "--decay-steps", "5"]
    if dp > 1 and rng.random() < 0.3:
        comp += ["--grad-reduce-dtype", "bf16"]
    if micro > 1 and pp == 1 and rng.random() < 0.2:
        comp.append("--unroll-microbatches")
    # --target cuda pads the vocabulary (61, 200, 255: to 64 x tp rows).
    if targets.random() < 0.5:
        comp += ["--target", "cuda"]
    tol = "2e-2" if bf16 or "--grad-reduce-dtype" in comp else "1e-4"
    print(name, ranks, tol, " ".join(imp), "--", " ".join(comp))
EOF

failed=0 ok=0 refused=0
while read -r name ranks tol rest; do
  imp=${rest%% -- *}
  comp=${rest#* -- }
  # shellcheck disable=SC2086
  if ! "$build/bin/tpc-import" "$work/models/$name.json" $imp \
      -o "$work/$name.mlir" 2>"$work/$name.import.txt" ||
     ! "$build/bin/tpc-compile" "$work/$name.mlir" --train --seed 5 $comp \
      -o "$work/models/$name.tpcx" 2>"$work/$name.compile.txt"; then
    echo "refused $name: $imp -- $comp"
    grep -h 'error' "$work/$name.import.txt" "$work/$name.compile.txt" | head -n 2 | sed 's/^/    /'
    refused=$((refused + 1))
    continue
  fi
  # A bf16 configuration's float32 twin (model_pair's reference): the same
  # without --dtype bf16 and bf16 reductions.
  if [ "$tol" = 2e-2 ]; then
    # shellcheck disable=SC2086
    twin_flags $imp
    twin_imp=("${TWIN_FLAGS[@]}")
    # shellcheck disable=SC2086
    twin_flags $comp
    "$build/bin/tpc-import" "$work/models/$name.json" "${twin_imp[@]}" \
      -o "$work/$name-f32.mlir" 2>/dev/null &&
      "$build/bin/tpc-compile" "$work/$name-f32.mlir" --train --seed 5 \
        "${TWIN_FLAGS[@]}" -o "$work/models/$name-f32.tpcx" 2>/dev/null ||
      echo "note: $name's float32 twin did not compile"
  fi
  if model_pair "$name" "$tol" "$name" "$ranks" >"$work/$name.pair.txt" \
      2>&1 </dev/null; then
    echo "ok   $name ($ranks rank(s)): $imp -- $comp"
    grep -h 'no farther from the float32' "$work/$name.pair.txt" |
      sed 's/.*tensors, worst/    over the tolerance, worst/' || true
    ok=$((ok + 1))
  else
    echo "FAIL $name ($ranks rank(s)): $imp -- $comp"
    grep -E 'FAIL|failed|error' "$work/$name.pair.txt" | head -n 12 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done <"$work/cases.txt"
echo "seed $seed: $ok ok, $failed failed, $refused refused by the compiler"
[ "$failed" -eq 0 ]
