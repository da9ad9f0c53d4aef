#!/usr/bin/env bash
# test/gpu/device-check.sh: the CUDA backend on a GPU machine, in stages
# (README.md beside this). Run from anywhere in the repository, after
# test/gpu/prepare.sh filled gpu-carry/ on a machine with the compiler:
#
#   OUT=/some/folder test/gpu/device-check.sh
#
#   1 build     runtime/ alone (cmake + ninja) into build-gpu/, with the
#               carried FlatBuffers/json headers and schema header, no MPI,
#               no OpenBLAS, CUDA for $TPC_CUDA_ARCHS (default 90: the
#               H200; the wgmma attention forward is built for sm_90a
#               alone), NCCL from the Python wheel
#   2 gpu       nvidia-smi and the CUDA device count; none: "no GPU:
#               skipped", exit 77 (1 when the build failed too)
#   3 kernels   tpcrt-device-check --device cuda --results $OUT/kernels.txt
#   3a kernels-attention  only where stage 3 failed: the six attention
#               opcodes' bf16 cases again (wgmma on Hopper); where they fail
#               and pass on mma.sync (stage 5b, run at once), the stages
#               after run with TPCRT_CUDA_ATTENTION=mma, said in the summary
#   3b kernels-cudnn  the attention cases again with TPCRT_CUDA_ATTENTION=cudnn
#               (cuDNN's fused attention from the wheel, header carried)
#               (on the H200 stage 3's attention forward runs on wgmma)
#   4 models    two training steps of the tiny GPT-2 (fp32 and bf16) and
#               Llama (fp32 and bf16, the bf16 once more with
#               TPCRT_CUDA_ATTENTION=cudnn), and of two bf16 models whose
#               attention takes the tensor-core kernels (head_dim 64 and
#               128) on --device cpu and cuda from the
#               same weights and
#               batch (--init-seed, --synthetic-seed): loss, first-step
#               gradients, params and AdamW state after the steps compared by
#               compare_dumps.py (fp32 1e-4, bf16 2e-2 relative, norm-wise;
#               checkpoints after AdamW twice that)
#   4b ranks    the same on several ranks (dp, tp with sequence parallelism,
#               pipelines (1F1B, ZB-H1), 4 ranks dp x tp and dp x pp), one
#               GPU per rank through NCCL,
#               where there are enough GPUs (TPC_GPU_RANKS; else SKIP)
#   5 nccl      tpcrt-nccl-check --local (one rank)
#   5b kernels-mma  the six attention opcodes' bf16 cases again with
#               TPCRT_CUDA_ATTENTION=mma: the mma.sync kernels that wgmma
#               replaces on Hopper (right after 3a where that failed)
#   6 bench     tpc-cuda-bench vs torch (GEMM, attention; attention also
#               with TPCRT_CUDA_ATTENTION=cudnn), then a training
#               step of the GPT-2 MFU model, tpc-run vs Hugging Face (and
#               vs tpc-compile's prediction), then (6f) that step's time
#               per opcode from tpc-run --trace, each kind beside the
#               compile's prediction for it (measured/predicted), and
#               the description's memory-bound kinds fitted to it;
#               last (6e) the attention cases on mma.sync (=mma) beside
#               wgmma: $OUT/bench.json and lines in the summary
#
#   7 sanitize  compute-sanitizer's memcheck on the opcodes stage 3 failed
#               (else the attention opcodes' bf16 cases), racecheck and
#               synccheck on attention and attention_grad (bf16); each run's
#               error count in the summary
#
# The stages run in the order 1 2 3 (7 3a) 4 4b 5 6a 6b 6c 6d 6f (7) 3b 6a2
# 5b 6e: the checks and the targets' measurements first (the sanitizer at
# once where stage 3 failed, to tell why while those kernels still run),
# cuDNN's and mma.sync's alternatives last, where the deadline cuts first.
# Each stage runs under `timeout` (its own budget, cut to what is left of
# the whole script's $TPC_GPU_DEADLINE seconds, default 285), writes its log
# when it ends and appends "stage N name: PASS|FAIL|SKIP (seconds) detail"
# to $OUT/summary.txt; a failing stage does not stop the next. At most 8
# files are written under $OUT (what the device tool brings back):
# summary.txt build.log device-check.log kernels.txt models.log nccl.log
# bench.log bench.json; the dumps go to $TPC_GPU_WORK (/tmp/tpc-gpu-work).
# Exit status: 0 all ran stages passed, 1 a stage failed, 77 no GPU.
#
# Environment: OUT (default /tmp/tpc-gpu-out), TPC_GPU_CARRY (gpu-carry),
# TPC_GPU_BUILD (build-gpu), TPC_CUDA_ARCHS (90), TPC_GPU_DEADLINE (285),
# TPC_GPU_JOBS (ninja -j, default nproc), TPC_GPU_RANKS (devices for the
# ranks stage, default nvidia-smi's count), TPC_GPU_RUN_TIMEOUT (tpc-run
# --timeout of the model stages), TPC_GPU_CMAKE_ARGS (extra cmake
# arguments), TPC_GPU_BUDGET_<STAGE> (a stage's budget in seconds, e.g.
# TPC_GPU_BUDGET_BUILD=1200 on a slow machine), TPC_GPU_PYTHON (python3),
# TPC_GPU_STAGE_RUNNER (what runs each stage, `RUNNER --stage NAME`;
# default this script: for driver-check.sh's stand-in).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Each stage runs as `$self --stage NAME`: this script, or a stand-in that
# test/gpu/driver-check.sh puts there to try the driver below.
self=${TPC_GPU_STAGE_RUNNER:-$root/test/gpu/device-check.sh}
cd "$root"

export OUT=${OUT:-/tmp/tpc-gpu-out}
export CARRY=$(cd "${TPC_GPU_CARRY:-gpu-carry}" 2>/dev/null && pwd || echo "${TPC_GPU_CARRY:-gpu-carry}")
export BUILD=${TPC_GPU_BUILD:-$root/build-gpu}
export WORK=${TPC_GPU_WORK:-/tmp/tpc-gpu-work}
export ARCHS=${TPC_CUDA_ARCHS:-90}
export PY=${TPC_GPU_PYTHON:-python3}
export JOBS=${TPC_GPU_JOBS:-$(nproc 2>/dev/null || echo 8)}
export PYTHONUNBUFFERED=1
# The device under test of stage 4: cuda; cpu only to try the stage's
# machinery here (`TPC_GPU_DUT=cpu device-check.sh --stage models`).
export DUT=${TPC_GPU_DUT:-cuda}
# The backend library for every program, wherever the build put it (the
# loader looks beside the program otherwise: tests in the build's root would
# not find <build>/lib).
export TPCRT_CUDA_BACKEND=${TPCRT_CUDA_BACKEND:-$BUILD/lib/libtpcrt-cuda.so}
DEADLINE=${TPC_GPU_DEADLINE:-285}

# cuda_tool NAME: the CUDA toolkit's program NAME, from PATH or else
# /usr/local/cuda/bin; nothing when neither has it.
cuda_tool() {
  command -v "$1" 2>/dev/null ||
    { [ -x "/usr/local/cuda/bin/$1" ] && echo "/usr/local/cuda/bin/$1"; } ||
    true
}

# findbin and model_pair (the models and ranks stages' CPU-vs-device
# comparison), shared with test/gpu/emulated-configs.sh.
source "$root/test/gpu/model-pair.sh"

#===-----------------------------------------------------------------------===#
# The stages, each run as `device-check.sh --stage NAME` under timeout.
#===-----------------------------------------------------------------------===#

stage_build() {
  set -x
  command -v cmake && cmake --version | head -n 1
  command -v ninja || { echo "no ninja"; return 1; }
  local nvcc=${CUDACXX:-}
  [ -z "$nvcc" ] && nvcc=$(cuda_tool nvcc)
  [ -n "$nvcc" ] && "$nvcc" --version | tail -n 2
  for f in include/flatbuffers/flatbuffers.h include/nlohmann/json.hpp \
           generated/tpcx_generated.h; do
    [ -f "$CARRY/$f" ] || { echo "no $CARRY/$f: run test/gpu/prepare.sh"; return 1; }
  done
  local args=(-S runtime -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DTPCRT_CUDA_ARCHITECTURES="$ARCHS"
    -DTPCRT_FLATBUFFERS_INCLUDE_DIR="$CARRY/include"
    -DTPCRT_NLOHMANN_JSON_INCLUDE_DIR="$CARRY/include"
    -DTPCRT_GENERATED_SCHEMA_DIR="$CARRY/generated"
    -DTPCRT_FLATC= -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON
    -DTPCRT_ENABLE_MPI=OFF -DTPCRT_ENABLE_OPENBLAS=OFF -DTPCRT_FUZZERS=OFF)
  [ -n "$nvcc" ] && args+=(-DCMAKE_CUDA_COMPILER="$nvcc")
  # The toolkit's libraries; where it has no cuBLASLt, the Python wheel's
  # (nvidia-cublas) for FindCUDAToolkit's CUDA::cublasLt.
  local cudalib cublaslt
  cudalib=$(dirname "$(dirname "${nvcc:-/usr/local/cuda/bin/nvcc}")")
  ls "$cudalib"/lib64/ "$cudalib"/targets/x86_64-linux/lib/ 2>/dev/null \
    | grep -E '^lib(cudart|cublas|nccl)' | sort -u | tr '\n' ' '; echo
  if ! ls "$cudalib"/lib64/libcublasLt.so* "$cudalib"/targets/x86_64-linux/lib/libcublasLt.so* \
       >/dev/null 2>&1; then
    cublaslt=$("$PY" -c 'import glob, nvidia, os; print(next(iter(sorted(p for r in nvidia.__path__ for p in glob.glob(os.path.join(r, "**", "libcublasLt.so*"), recursive=True))), ""))' 2>/dev/null)
    [ -n "$cublaslt" ] && args+=(-DCUDA_cublasLt_LIBRARY="$cublaslt")
  fi
  # cuDNN's graph API header, carried (the wheels may have none); the
  # library is opened at run time (TPCRT_CUDNN_LIBRARY, below).
  if [ -f "$CARRY/cudnn/include/cudnn_graph.h" ]; then
    args+=(-DTPCRT_CUDNN_INCLUDE_DIR="$CARRY/cudnn/include")
  fi
  if [ -n "${NCCL_DIR:-}" ]; then
    args+=(-DTPCRT_NCCL_INCLUDE_DIR="$NCCL_DIR/include"
           -DTPCRT_NCCL_LIBRARY="$NCCL_DIR/lib/libnccl.so.2")
  fi
  # shellcheck disable=SC2206
  args+=(${TPC_GPU_CMAKE_ARGS:-})
  cmake "${args[@]}" || return 1
  # Only what the stages run (tests that need GTest or MPI are not built).
  { set +x; } 2>/dev/null # the target list is long
  local all want=() t
  all=$(ninja -C "$BUILD" -t targets all 2>/dev/null | cut -d: -f1)
  for t in tpc-run tpcrt-cuda tpcrt-device-check tpcrt-nccl-check \
           tpc-cuda-bench; do
    if grep -qx "$t" <<<"$all"; then want+=("$t"); else echo "note: no target $t in this build"; fi
  done
  set -x
  ninja -C "$BUILD" -j "$JOBS" "${want[@]}" || return 1
  # Until runtime/CMakeLists.txt has its target: tpc-cuda-bench by hand,
  # against the libraries just built.
  if ! grep -qx tpc-cuda-bench <<<"$all"; then
    mkdir -p "$BUILD/bin"
    c++ -O2 -std=c++17 -Wall -Wextra -Iruntime/include -Iruntime/test -Iruntime/cuda \
      -I"$CARRY/generated" -I"$CARRY/include" \
      runtime/tools/tpc-cuda-bench.cpp "$BUILD/libtpcrt.a" \
      "$BUILD/libtpcrt_schema.a" -ldl -pthread \
      -o "$BUILD/bin/tpc-cuda-bench" || return 1
  fi
  ls -l "$BUILD/bin" "$BUILD/lib" 2>/dev/null
  return 0
}

stage_kernels() {
  local check
  check=$(findbin tpcrt-device-check)
  [ -n "$check" ] || { echo "tpcrt-device-check was not built (no target yet?)"; return 1; }
  "$check" --device cuda --results "$OUT/kernels.txt"
}

# attention_cases CHOICE [OP...]: the bf16 cases of the OPs (default the
# six attention opcodes) against the CPU device, with
# TPCRT_CUDA_ATTENTION=CHOICE ("": the default kernels), each opcode in a
# fresh process.
attention_cases() {
  local choice=$1 check op rc=0 ops=(attention attention_qkv attention_lse
    attention_qkv_lse attention_grad attention_qkv_grad)
  shift
  [ $# -gt 0 ] && ops=("$@")
  check=$(findbin tpcrt-device-check)
  [ -n "$check" ] || { echo "tpcrt-device-check was not built"; return 1; }
  for op in "${ops[@]}"; do
    env ${choice:+TPCRT_CUDA_ATTENTION=$choice} "$check" --device cuda \
      --op "$op" --dtype bf16 || rc=1
  done
  return $rc
}

# The attention kernels again with TPCRT_CUDA_ATTENTION=cudnn: the bf16
# cases without dropout (d = dv a multiple of 8) run on cuDNN's fused
# attention (the device says how many on stderr), the others on the own
# kernels; all against the CPU device.
stage_kernels_cudnn() {
  echo "TPCRT_CUDNN_LIBRARY=${TPCRT_CUDNN_LIBRARY:-}"
  attention_cases cudnn attention attention_grad
}

# Where stage 3 failed: the attention cases again with the default kernels
# (wgmma on Hopper), to tell an attention failure from the others.
stage_kernels_attention() { attention_cases ""; }

# The attention kernels again with TPCRT_CUDA_ATTENTION=mma: on a Hopper
# device the forward and backward on mma.sync instead of wgmma.
stage_kernels_mma() { attention_cases mma; }

# compute-sanitizer (the toolkit's) over the device check: memcheck on the
# opcodes that stage 3 failed (kernels.txt's FAIL lines, both dtypes), else
# on five attention opcodes' bf16 cases (all but attention_qkv_lse: wgmma,
# cp.async, the most shared memory); then racecheck and synccheck on attention's and
# attention_grad's bf16 cases. Each run prints "sanitize: TOOL OP (DTYPE):
# N errors" (the driver copies those lines into the summary); a sanitizer
# error fails the stage, a device check that fails on its values does not
# (stage 3 reports those).
stage_sanitize() {
  local sanitizer check op tool dtype=bf16 rc=0 status errors ops=()
  sanitizer=$(cuda_tool compute-sanitizer)
  [ -n "$sanitizer" ] || { echo "no compute-sanitizer"; return 77; }
  check=$(findbin tpcrt-device-check)
  [ -n "$check" ] || { echo "tpcrt-device-check was not built"; return 1; }
  if [ -f "$OUT/kernels.txt" ]; then
    mapfile -t ops < <(awk '$1 == "FAIL" { print $2 }' "$OUT/kernels.txt" |
      sort -u | head -n 6)
    [ ${#ops[@]} -eq 0 ] || dtype=all
  fi
  [ ${#ops[@]} -gt 0 ] ||
    ops=(attention attention_qkv attention_lse attention_grad attention_qkv_grad)
  # sanitize TOOL OP DTYPE
  sanitize() {
    "$sanitizer" --tool "$1" --error-exitcode 9 --print-limit 10 \
      "$check" --device cuda --op "$2" --dtype "$3" >"$WORK/sanitize.txt" 2>&1
    status=$?
    # The sanitizer's reports and the check's failures, not its PASS lines.
    grep -E '^=========|^FAIL|^error' "$WORK/sanitize.txt" | head -n 80
    # memcheck and synccheck end with "ERROR SUMMARY: N errors", racecheck
    # with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)".
    errors=$(grep -oE 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ error' \
      "$WORK/sanitize.txt" | grep -oE '[0-9]+ error' | grep -oE '[0-9]+' |
      tail -n 1)
    echo "sanitize: $1 $2 ($3): ${errors:-no} errors (exit $status)"
    [ "$status" -ne 9 ] && [ -n "$errors" ] && [ "$errors" -eq 0 ] || rc=1
  }
  for op in "${ops[@]}"; do
    sanitize memcheck "$op" "$dtype"
  done
  for tool in racecheck synccheck; do
    for op in attention attention_grad; do
      sanitize "$tool" "$op" bf16
    done
  done
  return $rc
}


stage_models() {
  local failed=0
  : >"$WORK/in-use.txt"
  # The own attention kernels (mma.sync where stage 3a chose it), but for
  # the runs that name cuDNN or the device's default (auto) below.
  export TPCRT_CUDA_ATTENTION=${TPCRT_CUDA_ATTENTION:-own}
  if ! model_pair gpt2-tiny 1e-4; then
    failed=1
    # Fused pairs (bias + GeLU in cuBLASLt's epilogue, dropout + add) off:
    # does the difference come from them?
    echo "== gpt2-tiny again with TPCRT_CUDA_FUSIONS=none"
    TPCRT_CUDA_FUSIONS=none model_pair gpt2-tiny 1e-4 || true
  fi
  model_pair llama-tiny 1e-4 || failed=1
  # The vocabulary that --target cuda pads (250 -> 256 rows).
  model_pair gpt2-v250-cuda 1e-4 || failed=1
  model_pair gpt2-tiny-bf16 2e-2 || failed=1
  # Llama in bf16 with its attention (and gradient) on the own kernels, then
  # through cuDNN's fused attention.
  model_pair llama-tiny-bf16 2e-2 || failed=1
  TPCRT_CUDA_ATTENTION=cudnn model_pair llama-tiny-bf16 2e-2 \
    llama-tiny-bf16-cudnn || failed=1
  # A backend built without cuDNN runs the own kernels for cudnn and auto
  # alike (the cudnn run's log just above says so): the two d128 runs below
  # would repeat the own run, so they are left out, and the summary says why.
  local no_cudnn=
  grep -q 'this build has no cuDNN' "$WORK/llama-tiny-bf16-dut.txt" &&
    no_cudnn=1
  # Attention on tensor cores (wgmma on Hopper) inside a training step:
  # head_dim 64 (GPT-2's packed q, k, v, dropout) and 128 (Llama, grouped).
  # (Its biases start at zero: after two AdamW steps each holds only
  # +-lr-sized updates, whose elements of gradients differing in sign
  # model_pair leaves out, each within the steps' lr.)
  model_pair gpt2-d64-bf16 2e-2 || failed=1
  model_pair llama-d128-bf16 2e-2 || failed=1
  # The same step on mma.sync (what an sm_80 device runs, and Hopper with
  # =mma), and through cuDNN's fused attention (no dropout, d 128).
  TPCRT_CUDA_ATTENTION=mma model_pair llama-d128-bf16 2e-2 \
    llama-d128-bf16-mma || failed=1
  if [ -n "$no_cudnn" ]; then
    echo "  llama-d128-bf16 with TPCRT_CUDA_ATTENTION=cudnn and auto: not" \
      "run, this build has no cuDNN (both are the own kernels' run)" |
      tee -a "$OUT/summary.txt"
  else
    TPCRT_CUDA_ATTENTION=cudnn model_pair llama-d128-bf16 2e-2 \
      llama-d128-bf16-cudnn || failed=1
    # The device's default: cuDNN where it measured faster at prepare (the
    # run's log says which, "tpcrt: attention: cuDNN measured faster for").
    TPCRT_CUDA_ATTENTION=auto model_pair llama-d128-bf16 2e-2 \
      llama-d128-bf16-auto || failed=1
  fi
  fusions_exact gpt2-tiny
  # Nothing allocated per step, as the driver counts the GPU's memory (the
  # libraries' own buffers too, which the emulation cannot see): said in
  # the summary, not a failure of the stage's comparisons.
  in_use_summary | tee -a "$OUT/summary.txt"
  return $failed
}

# The device's own fused kernels (dropout + add, the norm backward, the loss
# + gradient) on the GPU: $1's two steps with TPCRT_CUDA_FUSIONS=kernels and
# =none, the gradients, outputs and checkpoint compared byte for byte
# (runtime.CudaEmulatedFusions holds them equal in the emulation). Said in
# the summary; not a failure (nvcc may contract a double product into an
# FMA differently in the fused and unfused kernels).
fusions_exact() {
  local name=$1 fusions same=yes
  for fusions in kernels none; do
    TPCRT_CUDA_FUSIONS=$fusions "$(findbin tpc-run)" \
      "$CARRY/models/$name.tpcx" --device "$DUT" --init-seed 7 \
      --synthetic-seed 7 --steps 2 \
      --dump-grads "$WORK/$name-$fusions-grads.safetensors" \
      --dump-outputs "$WORK/$name-$fusions-out.safetensors" \
      --save-checkpoint "$WORK/$name-$fusions-ckpt.safetensors" \
      >"$WORK/$name-$fusions.txt" 2>&1 || same="not run ($fusions failed)"
  done
  if [ "$same" = yes ]; then
    for part in grads out ckpt; do
      cmp -s "$WORK/$name-kernels-$part.safetensors" \
        "$WORK/$name-none-$part.safetensors" || same="no ($part differ)"
    done
  fi
  echo "  fused kernels = unfused bit for bit ($name, TPCRT_CUDA_FUSIONS=kernels vs none): $same" |
    tee -a "$OUT/summary.txt"
}

# The multi-rank models (models.sh) on the CPU ranks and on one CUDA device
# per rank talking through NCCL, where there are enough devices
# (TPC_GPU_RANKS, default: nvidia-smi's count; the emulated backend's test
# sets it). Skipped (77) when none fits: the lent machine has one GPU.
stage_ranks() {
  local gpus=${TPC_GPU_RANKS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
  local failed=0 ran=0 listed=0 name ranks tol
  echo "devices for ranks: $gpus"
  : >"$WORK/in-use.txt"
  while read -r name ranks tol; do
    listed=$((listed + 1))
    if [ "$ranks" -gt "$gpus" ]; then
      echo "== $name: $ranks ranks, $gpus devices: not run"
      continue
    fi
    ran=$((ran + 1))
    # Not the list's stdin: mpiexec reads its own.
    model_pair "$name" "$tol" "$name" "$ranks" </dev/null || failed=1
  done <"$CARRY/models/ranks.txt" # models.sh's list
  echo "ranks: $ran of $listed run"
  [ "$ran" -gt 0 ] || return 77
  in_use_summary | tee -a "$OUT/summary.txt"
  return $failed
}

stage_nccl() {
  local check
  check=$(findbin tpcrt-nccl-check)
  [ -n "$check" ] || { echo "tpcrt-nccl-check was not built (no NCCL at configure time?)"; return 1; }
  echo "TPCRT_NCCL_LIBRARY=${TPCRT_NCCL_LIBRARY:-}"
  "$check" --local
}

# The cases tpc-cuda-bench and gemm_attention_torch.py both run: square and
# long-K GEMMs in both weight layouts, the MFU model's MLP and LM head (tied,
# out_in, N = 50257: no multiple of 8; and 50304, the rows --target cuda
# pads it to, what gpt2-mfu.tpcx runs); attention at the issue's shape (seq
# 4096, head dim 128), the MFU model's, and non-causal; the backward
# (attention_grad) at the first two; the MFU model's forward and backward
# again with its attention dropout (0.1: the own kernels draw it; its
# profile's attention took 2.7 times the bench's forward without it).
BENCH_CASES="gemm:8192,8192,8192 gemm:8192,8192,8192,out_in \
gemm:4096,16384,4096 gemm:16384,2048,8192 gemm:16384,8192,2048 \
gemm:16384,2048,50257,out_in gemm:16384,2048,50304,out_in \
attn:4,32,4096,128,causal attn:8,16,2048,128,causal attn:4,32,4096,128,full \
attn_grad:4,32,4096,128,causal attn_grad:8,16,2048,128,causal \
attn_grad:4,32,4096,128,causal,recompute \
attn:8,16,2048,128,causal,dropout attn_grad:8,16,2048,128,causal,dropout"

# The GEMMs under 95% of torch on the H100 (2026-12-06) and the padded LM
# head, again on cuBLASLt's heuristic's second and third algorithms
# (TPCRT_CUDA_GEMM_ALGO; tpc-cuda-bench labels them tpc-algoN): whether
# choosing among them at prepare would reach torch.
ALGO_CASES="gemm:8192,8192,8192 gemm:4096,16384,4096 gemm:16384,8192,2048 \
gemm:16384,2048,50304,out_in"

stage_bench_kernels_tpc() {
  local algo rc
  # shellcheck disable=SC2086
  "$(findbin tpc-cuda-bench)" --warmup 3 --iters 20 $BENCH_CASES \
    | tee "$WORK/bench-tpc.jsonl"
  rc=${PIPESTATUS[0]}
  for algo in 1 2; do
    # shellcheck disable=SC2086
    TPCRT_CUDA_GEMM_ALGO=$algo "$(findbin tpc-cuda-bench)" --warmup 3 \
      --iters 10 $ALGO_CASES | tee -a "$WORK/bench-tpc.jsonl"
  done
  return "$rc"
}

# bench_attention CHOICE: the attention cases (forward and backward) of
# BENCH_CASES with
# TPCRT_CUDA_ATTENTION=CHOICE (tpc-cuda-bench labels them tpc-CHOICE), into
# $WORK/bench-tpc-CHOICE.jsonl.
bench_attention() {
  local cases=() c
  for c in $BENCH_CASES; do
    case $c in
      *,dropout*) [ "$1" = cudnn ] && continue ;; # cuDNN takes no dropout
    esac
    case $c in attn:* | attn_grad:*) cases+=("$c") ;; esac
  done
  TPCRT_CUDA_ATTENTION=$1 "$(findbin tpc-cuda-bench)" --warmup 3 \
    --iters 20 "${cases[@]}" | tee "$WORK/bench-tpc-$1.jsonl"
  return "${PIPESTATUS[0]}"
}

# The attention cases through cuDNN.
stage_bench_attention_cudnn() { bench_attention cudnn; }

# The attention cases on mma.sync (not wgmma) on Hopper.
stage_bench_attention_mma() { bench_attention mma; }

stage_bench_kernels_torch() {
  # shellcheck disable=SC2086
  "$PY" benchmarks/cuda/gemm_attention_torch.py --warmup 3 --iters 20 \
    $BENCH_CASES | tee "$WORK/bench-torch.jsonl"
  return "${PIPESTATUS[0]}"
}

# The MFU model (models.sh --mfu) and its dimensions, report.py's
# arguments; through the emulated backend a tiny one instead
# (emulated-check.sh bench).
STEP_MODEL=${TPC_GPU_STEP_MODEL:-gpt2-mfu}
STEP_DIMS=${TPC_GPU_STEP_DIMS:---batch 8 --seq 2048 --hidden 2048 --layers 8 --vocab 50257}

# The step model's report whose prediction is for this GPU: NAME.h100.
# report.json on an H100 (models.sh makes it beside the h200 one), else
# NAME.report.json (--hardware h200, the issue's GPU).
step_report() {
  local name gpu
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null |
    head -n 1)
  case $gpu in
    *H100*) name=$CARRY/models/$STEP_MODEL.h100.report.json ;;
  esac
  [ -n "${name:-}" ] && [ -f "$name" ] || name=$CARRY/models/$STEP_MODEL.report.json
  echo "$name"
}

# The MFU model: 4 steps (the first warms up); the step time is read from
# tpc-run's tokens_per_s of steps 2-4 (the time of runStep and the reading of
# the loss, grad_norm and lr; not the start, the weight init or the first
# step); beside it tpc-compile's prediction for the same executable (its
# report's "predicted" section, for this GPU: step_report) and the device's
# memory.
stage_bench_gpt_tpc() {
  local start end rc report=()
  start=$(date +%s.%N)
  "$(findbin tpc-run)" "$CARRY/models/$STEP_MODEL.tpcx" --device cuda \
    --init-seed 1 --synthetic-seed 1 --steps 4 2>&1 | tee "$WORK/gpt-tpc.txt"
  rc=${PIPESTATUS[0]}
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "wall %.1f s (start, weight init, 4 steps)\n", b - a }'
  [ "$rc" -eq 0 ] || return "$rc"
  local predicted
  predicted=$(step_report)
  grep -qs '"predicted"' "$predicted" && report=(--report "$predicted")
  # shellcheck disable=SC2086
  "$PY" benchmarks/cuda/report.py tpc-step --log "$WORK/gpt-tpc.txt" \
    $STEP_DIMS "${report[@]}" | tee "$WORK/gpt-tpc.jsonl"
  return "${PIPESTATUS[0]}"
}

# Where the MFU model's step goes: 2 steps with tpc-run --trace (each run
# timed by events on the compute stream, the step's fusions and batches
# kept), the second's time per opcode and slowest kernels; with the
# compile's prediction for this GPU (step_report), each kind's predicted
# time beside and measured/predicted, which says what the cost model
# misprices.
stage_profile_gpt_tpc() {
  local predicted gpu report=()
  "$(findbin tpc-run)" "$CARRY/models/$STEP_MODEL.tpcx" --device cuda \
    --init-seed 1 --synthetic-seed 1 --steps 2 \
    --trace "$WORK/gpt-trace.json" || return 1
  predicted=$(step_report)
  # With the prediction, the description it was compiled with, its
  # memory-bound kinds and attention values fitted to this trace:
  # $WORK/GPU.calibrated.json (the summary's `calibrated from` and
  # `calibrated attention` lines have every value).
  case $predicted in
    *.h100.report.json) gpu=h100 ;;
    *) gpu=h200 ;;
  esac
  grep -qs '"predicted"' "$predicted" && report=(--report "$predicted"
    --calibrate "hardware/$gpu.json" --write "$WORK/$gpu.calibrated.json")
  # shellcheck disable=SC2086
  "$PY" benchmarks/cuda/report.py trace-ops --trace "$WORK/gpt-trace.json" \
    $STEP_DIMS "${report[@]}" | tee "$WORK/gpt-profile.txt"
  return "${PIPESTATUS[0]}"
}

stage_bench_gpt_torch() {
  "$PY" benchmarks/cuda/gpt_step_torch.py --batch 8 --seq 2048 --hidden 2048 \
    --heads 16 --layers 8 --vocab 50257 --dropout 0.1 --warmup 3 --steps 5 \
    | tee "$WORK/gpt-torch.jsonl"
  return "${PIPESTATUS[0]}"
}

stage_gpu() {
  local n=0 count
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
      --format=csv,noheader
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  else
    echo "no nvidia-smi"
  fi
  count=$(findbin tpcrt-nccl-check)
  if [ -n "$count" ]; then
    echo "tpcrt cudaDeviceCount: $("$count" --count-devices)"
  fi
  echo "devices $n"
  [ "$n" -gt 0 ] || return 77
}

if [ "${1:-}" = --stage ]; then
  "stage_${2//-/_}"
  exit $?
fi

#===-----------------------------------------------------------------------===#
# The driver.
#===-----------------------------------------------------------------------===#

mkdir -p "$OUT" "$WORK"
rm -f "$WORK"/*.safetensors "$WORK"/*.txt "$WORK"/*.jsonl "$WORK"/*.ok
summary=$OUT/summary.txt
: >"$summary"
t0=$(date +%s)
failures=0

note() { echo "$*" | tee -a "$summary"; }

# run_stage N NAME BUDGET LOG: the stage under timeout, its output appended
# to $OUT/LOG (several stages may share one log: 8 files at most come back).
run_stage() {
  local n=$1 name=$2 budget=$3 log=$OUT/$4 var left limit s rc status
  var=TPC_GPU_BUDGET_$(echo "$name" | tr 'a-z-' 'A-Z_')
  budget=${!var:-$budget}
  left=$((DEADLINE - ($(date +%s) - t0)))
  limit=$((budget < left ? budget : left))
  if [ "$left" -lt 5 ]; then
    note "stage $n $name: SKIP (no time left of the ${DEADLINE}s deadline)"
    failures=$((failures + 1))
    return 1
  fi
  s=$(date +%s)
  {
    echo "===== stage $n $name (limit ${limit}s) $(date -u +%H:%M:%S)"
    timeout -k 5 "$limit" "$self" --stage "$name"
  } >>"$log" 2>&1
  rc=$?
  # timeout's status is the block's: the last command's.
  case $rc in
    0) status=PASS ;;
    77) status=SKIP ;;
    124|137) status="FAIL (timeout after ${limit}s)" ;;
    *) status="FAIL (exit $rc)" ;;
  esac
  echo "===== stage $n $name: $status" >>"$log"
  note "stage $n $name: $status ($(( $(date +%s) - s ))s, log $4)"
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || failures=$((failures + 1))
  return $rc
}

# stage_lines N NAME: what stage N printed into device-check.log, without
# the run's ===== lines.
stage_lines() {
  sed -n "/===== stage $1 $2 (/,/===== stage $1 $2:/p" "$OUT/device-check.log" |
    grep -v '^====='
}

# Stage 7 and its result lines into the summary; once (`sanitized`).
sanitized=0
run_sanitize() {
  sanitized=1
  run_stage 7 sanitize 70 device-check.log
  stage_lines 7 sanitize | grep '^sanitize: ' | sed 's/^/  /' |
    tee -a "$summary"
}

note "device-check $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"

# NCCL from the Python wheel (nvidia-nccl-cu13): its folder for the build
# (tpcrt_nccl links it) and TPCRT_NCCL_LIBRARY for the backend's dlopen.
# Looked for anywhere under the nvidia namespace package (the CUDA 13 wheels
# moved some libraries to nvidia/cu13/), beside an include/nccl.h.
NCCL_DIR=$(timeout 30 "$PY" - 2>/dev/null <<'EOF'
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(root, "**", "libnccl.so.2"),
                                recursive=True)):
        top = os.path.dirname(os.path.dirname(lib))
        if os.path.exists(os.path.join(top, "include", "nccl.h")):
            print(top)
            raise SystemExit
EOF
)
if [ -n "$NCCL_DIR" ] && [ -f "$NCCL_DIR/lib/libnccl.so.2" ]; then
  export NCCL_DIR
  export TPCRT_NCCL_LIBRARY=$NCCL_DIR/lib/libnccl.so.2
  export LD_LIBRARY_PATH=$NCCL_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  note "NCCL from the wheel: $TPCRT_NCCL_LIBRARY"
else
  NCCL_DIR=
  note "no NCCL wheel (libnccl.so.2 and include/nccl.h under python3's nvidia package): the toolkit's, if any"
fi

# cuDNN from the Python wheel (nvidia-cudnn-cu*), for TPCRT_CUDA_ATTENTION=cudnn.
CUDNN_LIB=$(timeout 30 "$PY" - 2>/dev/null <<'EOF'
import glob, os
import nvidia
for root in nvidia.__path__:
    for lib in sorted(glob.glob(os.path.join(root, "**", "libcudnn.so.9"),
                                recursive=True)):
        print(lib)
        raise SystemExit
EOF
)
if [ -n "$CUDNN_LIB" ] && [ -f "$CUDNN_LIB" ]; then
  export TPCRT_CUDNN_LIBRARY=$CUDNN_LIB
  note "cuDNN from the wheel: $TPCRT_CUDNN_LIBRARY"
  # cuDNN's sub-libraries load cuBLAS(Lt) and NVRTC, which torch preloads
  # from their own wheels; outside Python the loader must find them: the
  # wheels' folders go last on the path (the toolkit's copies stay first).
  wheel_libs=$(timeout 30 "$PY" - 2>/dev/null <<'EOF'
import glob, os
import nvidia
dirs = []
for root in nvidia.__path__:
    for pattern in ("libcublasLt.so.*", "libcublas.so.*", "libnvrtc.so.*",
                    "libnvrtc-builtins.so.*"):
        for lib in glob.glob(os.path.join(root, "**", pattern), recursive=True):
            d = os.path.dirname(lib)
            if d not in dirs:
                dirs.append(d)
print(":".join(dirs))
EOF
)
  if [ -n "$wheel_libs" ]; then
    # The toolkit's folder before them: LD_LIBRARY_PATH outranks the
    # backend's RUNPATH, and its cuBLASLt is the one it was built with.
    [ -d /usr/local/cuda/lib64 ] && wheel_libs=/usr/local/cuda/lib64:$wheel_libs
    export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$wheel_libs
    note "cuDNN's dependencies from the wheels: $wheel_libs"
  fi
else
  note "no cuDNN wheel (libcudnn.so.9 under python3's nvidia package): the search's"
fi

run_stage 1 build 170 build.log
built=$?
run_stage 2 gpu 20 device-check.log
gpu=$?
# What stage 2 saw (nvidia-smi, the device counts), into the summary.
stage_lines 2 gpu | sed 's/^/  /' | tee -a "$summary"
if [ "$gpu" -ne 0 ]; then
  note "no GPU: skipped"
  if [ "$built" -ne 0 ]; then
    note "result: FAIL (the build failed)"
    exit 1
  fi
  note "result: SKIP (the build passed; no GPU for the rest)"
  exit 77
fi
if [ "$built" -ne 0 ]; then
  note "the build failed: the GPU stages are skipped"
  note "result: FAIL"
  exit 1
fi
run_stage 3 kernels 45 device-check.log
kernels=$?
# Where stage 3 failed on the attention cases that wgmma serves and
# mma.sync passes them, the later stages run on mma.sync
# (TPCRT_CUDA_ATTENTION=mma), so that the models, their gradients and the
# MFU step are still checked and timed on kernels that are right.
mma_checked=0
if [ "$kernels" -ne 0 ] && [ "$kernels" -ne 77 ]; then
  # What went wrong, while the failing kernels are the ones that run.
  run_sanitize
  if ! run_stage 3a kernels-attention 25 device-check.log; then
    mma_checked=1
    if run_stage 5b kernels-mma 20 device-check.log; then
      export TPCRT_CUDA_ATTENTION=mma
      note "the attention cases fail with the default kernels and pass on mma.sync: the stages below run with TPCRT_CUDA_ATTENTION=mma (but for those that set cudnn)"
    fi
  fi
fi
run_stage 4 models 60 models.log
run_stage 4b ranks 60 models.log
run_stage 5 nccl 25 nccl.log
run_stage 6a bench-kernels-tpc 35 bench.log
run_stage 6b bench-kernels-torch 35 bench.log
run_stage 6c bench-gpt-tpc 60 bench.log
run_stage 6d bench-gpt-torch 60 bench.log
run_stage 6f profile-gpt-tpc 30 bench.log
[ "$sanitized" -eq 1 ] || run_sanitize
# What the targets do not need comes last, so that the deadline cuts it
# first: cuDNN's attention (checked, then timed) and the mma.sync kernels.
run_stage 3b kernels-cudnn 30 device-check.log
run_stage 6a2 bench-attention-cudnn 20 bench.log
[ "$mma_checked" -eq 1 ] || run_stage 5b kernels-mma 20 device-check.log
run_stage 6e bench-attention-mma 15 bench.log
# The comparison lines and bench.json, from whatever the stages left.
cat "$WORK"/bench-tpc.jsonl "$WORK"/bench-tpc-cudnn.jsonl "$WORK"/bench-tpc-mma.jsonl \
  "$WORK"/bench-torch.jsonl "$WORK"/gpt-tpc.jsonl \
  "$WORK"/gpt-torch.jsonl 2>/dev/null \
  | timeout 30 "$PY" benchmarks/cuda/report.py merge --json "$OUT/bench.json" \
  | tee -a "$summary"
# The profile's summary lines (its table is in bench.log).
grep -E '^(step [0-9]+ by opcode|TFLOP/s|measured/predicted|calibrated (from|attention))' \
  "$WORK/gpt-profile.txt" 2>/dev/null | tee -a "$summary"
note "total $(( $(date +%s) - t0 ))s"
if [ "$failures" -gt 0 ]; then
  note "result: FAIL ($failures stage(s))"
  exit 1
fi
note "result: PASS"
exit 0
