#!/bin/sh
# runtime.GemmSpecModels and runtime.CudnnModels: what the CUDA device plans
# for compiled models, checked without a GPU. The models: tiny GPT-2 with
# dropout, fp32 and bf16, trained with two microbatches; Llama with
# grouped-query attention, unfused, whose head counts and sizes all differ;
# a tensor-parallel rank of GPT-2; GPT-2 in bf16 without dropout, alone and
# as a tensor-parallel rank, and Llama in bf16 with fused attention (what
# cuDNN's fused attention takes). GemmSpec.DISABLED_Model*: every GEMM kernel
# mapped to its cuBLAS problem (cuda/GemmSpec.h) and evaluated against the
# CPU kernel. CudnnAttention.DISABLED_Model*: which attention kernels cuDNN
# takes, and their graphs built (cuda/CudnnGraph.h).
# Usage: gemm_spec_models.sh <bin dir> <source root> <work dir> <tests>
#        [<gtest filter>]   (default GemmSpec.DISABLED_Model*)
set -e
bin=$1 src=$2 work=$3 tests=$4 filter=${5:-GemmSpec.DISABLED_Model*}
rm -rf "$work" && mkdir -p "$work"
configs=$src/test/Import/Inputs
"$bin/tpc-import" "$configs/gpt2-tiny.json" --batch 4 --seq 16 --dropout 0.1 \
  -o "$work/gpt2.mlir"
"$bin/tpc-import" "$configs/gpt2-tiny.json" --batch 4 --seq 16 --dtype bf16 \
  -o "$work/gpt2-bf16.mlir"
"$bin/tpc-import" "$configs/gpt2-tiny.json" --batch 4 --seq 16 --dtype bf16 \
  --dropout 0 -o "$work/gpt2-bf16-nodrop.mlir"
"$bin/tpc-import" "$configs/llama-gqa.json" --batch 2 --seq 12 \
  --attention unfused -o "$work/llama.mlir"
"$bin/tpc-import" "$configs/llama-gqa.json" --batch 2 --seq 12 --dtype bf16 \
  -o "$work/llama-bf16.mlir"
"$bin/tpc-compile" "$work/gpt2.mlir" --train --microbatches 2 -o "$work/gpt2.tpcx"
"$bin/tpc-compile" "$work/gpt2-bf16.mlir" --train -o "$work/gpt2-bf16.tpcx"
"$bin/tpc-compile" "$work/gpt2-bf16-nodrop.mlir" --train \
  -o "$work/gpt2-bf16-nodrop.tpcx"
"$bin/tpc-compile" "$work/gpt2-bf16-nodrop.mlir" --train --mesh tp=2 \
  -o "$work/gpt2-bf16-nodrop-tp2.tpcx"
"$bin/tpc-compile" "$work/llama.mlir" --train -o "$work/llama.tpcx"
"$bin/tpc-compile" "$work/llama-bf16.mlir" --train -o "$work/llama-bf16.tpcx"
"$bin/tpc-compile" "$work/gpt2.mlir" --train --mesh tp=2 -o "$work/gpt2-tp2.tpcx"
"$bin/tpc-compile" "$work/gpt2-bf16.mlir" --train --mesh dp=2 \
  -o "$work/gpt2-bf16-dp2.tpcx"
models=
for m in gpt2 gpt2-bf16 gpt2-bf16-nodrop gpt2-bf16-nodrop-tp2 llama llama-bf16 \
         gpt2-tp2 gpt2-bf16-dp2; do
  models=$models${models:+:}$work/$m.tpcx
done
TPCRT_GEMM_SPEC_MODELS=$models "$tests" --gtest_also_run_disabled_tests \
  --gtest_filter="$filter"
