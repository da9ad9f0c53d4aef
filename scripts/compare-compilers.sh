#!/usr/bin/env bash
# Compiles the same models with two builds of tpc and compares what they
# write, byte for byte: the .tpcx executables and the --report JSON.
# For refactors that must not change behaviour (issue 11).
#
#   scripts/compare-compilers.sh OLD_BIN_DIR NEW_BIN_DIR [WORK_DIR]
#
# Prints one line per configuration (same / DIFFERENT) and exits 1 if any
# output differs. Each bin dir holds tpc-import and tpc-compile.
set -euo pipefail
old=${1:?usage: $0 OLD_BIN_DIR NEW_BIN_DIR [WORK_DIR]}
new=${2:?usage: $0 OLD_BIN_DIR NEW_BIN_DIR [WORK_DIR]}
work=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
inputs=$here/test/Import/Inputs
mkdir -p "$work"

# name|config|import flags
models=(
  "gpt2|$inputs/gpt2-tiny.json|--seq 32 --batch 8 --dropout 0.1"
  "gpt2-unfused-bf16|$inputs/gpt2-tiny.json|--seq 32 --batch 8 --attention unfused --dropout 0.1 --dtype bf16"
  "llama-gqa|$inputs/llama-gqa.json|--seq 16 --batch 8"
)
flagsets=(
  ""
  "--mesh tp=2"
  "--train"
  "--train --microbatches 2 --optimizer sgd --momentum 0.9"
  "--train --mesh tp=2 --microbatches 2"
  "--train --mesh dp=2,tp=2 --sequence-parallel --microbatches 2"
  "--train --mesh tp=4 --vocab-parallel=false --grad-clip 1"
  "--train --mesh dp=4 --lr-schedule cosine --decay-steps 10"
  # Refused: the error messages must match too.
  "--lr 1e-3"
  "--train --lr -1"
  "--train --optimizer sgd --beta1 0.9"
  "--train --lr-schedule cosine --warmup-steps 4 --decay-steps 3"
  "--mesh tp=2,pp=2"
  "--sequence-parallel"
)
status=0
for model in "${models[@]}"; do
  IFS='|' read -r name config importFlags <<<"$model"
  # shellcheck disable=SC2086
  "$new/tpc-import" "$config" $importFlags -o "$work/$name.mlir"
  for i in "${!flagsets[@]}"; do
    flags=${flagsets[$i]}
    for side in old new; do
      bin=${!side}
      rm -f "$work/$name.$i.$side".{tpcx,json,log}
      # shellcheck disable=SC2086
      "$bin/tpc-compile" "$work/$name.mlir" $flags -o "$work/$name.$i.$side.tpcx" \
        --report "$work/$name.$i.$side.json" 2>"$work/$name.$i.$side.log" ||
        echo "failed" >>"$work/$name.$i.$side.log"
    done
    verdict=same
    for ext in tpcx json log; do
      a=$work/$name.$i.old.$ext b=$work/$name.$i.new.$ext
      [ -e "$a" ] || [ -e "$b" ] || continue # refused by both
      if ! cmp -s "$a" "$b"; then
        verdict="DIFFERENT ($ext)"
        status=1
      fi
    done
    printf '%-20s %-62s %s\n' "$name" "${flags:-(forward)}" "$verdict"
  done
done
echo "outputs in $work"
exit $status
