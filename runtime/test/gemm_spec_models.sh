#!/bin/sh
# runtime.GemmSpecModels: every GEMM kernel of compiled models (tiny GPT-2
# with dropout, fp32 and bf16, trained with two microbatches; Llama with
# grouped-query attention, unfused, whose head counts and sizes all differ;
# a tensor-parallel rank of GPT-2) mapped to its cuBLAS problem
# (cuda/GemmSpec.h) and evaluated against the CPU kernel.
# Usage: gemm_spec_models.sh <bin dir> <source root> <work dir> <gemm-spec-tests>
set -e
bin=$1 src=$2 work=$3 tests=$4
rm -rf "$work" && mkdir -p "$work"
configs=$src/test/Import/Inputs
"$bin/tpc-import" "$configs/gpt2-tiny.json" --batch 4 --seq 16 --dropout 0.1 \
  -o "$work/gpt2.mlir"
"$bin/tpc-import" "$configs/gpt2-tiny.json" --batch 4 --seq 16 --dtype bf16 \
  -o "$work/gpt2-bf16.mlir"
"$bin/tpc-import" "$configs/llama-gqa.json" --batch 2 --seq 12 \
  --attention unfused -o "$work/llama.mlir"
"$bin/tpc-compile" "$work/gpt2.mlir" --train --microbatches 2 -o "$work/gpt2.tpcx"
"$bin/tpc-compile" "$work/gpt2-bf16.mlir" --train -o "$work/gpt2-bf16.tpcx"
"$bin/tpc-compile" "$work/llama.mlir" --train -o "$work/llama.tpcx"
"$bin/tpc-compile" "$work/gpt2.mlir" --train --mesh tp=2 -o "$work/gpt2-tp2.tpcx"
TPCRT_GEMM_SPEC_MODELS="$work/gpt2.tpcx:$work/gpt2-bf16.tpcx:$work/llama.tpcx:$work/gpt2-tp2.tpcx" \
  "$tests" --gtest_also_run_disabled_tests \
  --gtest_filter='GemmSpec.DISABLED_Model*'
