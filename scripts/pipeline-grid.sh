#!/bin/sh
# Usage: scripts/pipeline-grid.sh [BIN_DIR] [WORK_DIR]
#
# The wider grid of issue 13 (ctest runs a subset: test/Dist/pipeline-train-*):
# for GPT-2 (tied, dropout 0.1, 8 layers) and Llama (grouped-query attention,
# 8 layers), every schedule with p in {2, 4} and m in {1, 2, 4, 8} (the
# combinations the schedule takes: interleaved-1f1b needs m a multiple of p),
# on three layouts: pipeline alone, with tp = 2 and sequence parallelism,
# and with dp = 2; each run is two AdamW steps compared with the one-device
# run of the same microbatches (tolerance 1e-5 pipeline alone, 6e-5 with tp
# or dp, as the ctest tests). Prints one line per run and a summary; exits
# 1 if any run fails or differs.
set -u
bin=${1:-build/bin}
work=${2:-$(mktemp -d "${TMPDIR:-/tmp}/pipeline-grid.XXXXXX")}
here=$(cd "$(dirname "$0")/.." && pwd)
compare=$here/test/Compile/Inputs/compare-runs.py
runs=$here/test/Dist/Inputs/pipeline-runs.sh
mkdir -p "$work"
total=0 failed=0
for model in gpt2 llama; do
  case $model in
    gpt2) config=$here/test/Import/Inputs/gpt2-tiny.json; extra="--dropout 0.1" ;;
    llama) config=$here/test/Import/Inputs/llama-gqa.json; extra="" ;;
  esac
  dir=$work/$model
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  "$bin/tpc-import" "$config" --num-layers 8 --seq 16 --batch 16 $extra -o "$dir/model.mlir" || exit 1
  for m in 1 2 4 8; do
    sh "$runs" "$bin" "$dir/model.mlir" "$dir" 2 "one-m$m:--microbatches $m" > /dev/null || exit 1
    for p in 2 4; do
      for schedule in gpipe 1f1b interleaved-1f1b zb-h1 zb-v; do
        [ "$schedule" = interleaved-1f1b ] && [ $((m % p)) -ne 0 ] && continue
        for layout in pp tp dp; do
          case $layout in
            pp) mesh="pp=$p"; flags=""; tolerance=1e-5 ;;
            tp) mesh="pp=$p,tp=2"; flags="--sequence-parallel"; tolerance=6e-5 ;;
            dp) mesh="dp=2,pp=$p"; flags=""; tolerance=6e-5 ;;
          esac
          # The batch of 16 splits into dp x m microbatches.
          [ "$layout" = dp ] && [ $((16 % (2 * m))) -ne 0 ] && continue
          name=$schedule-p$p-m$m-$layout
          total=$((total + 1))
          if ! sh "$runs" "$bin" "$dir/model.mlir" "$dir" 2 \
              "$name:--mesh $mesh $flags --microbatches $m --schedule $schedule" \
              > "$dir/$name.out" 2>&1; then
            failed=$((failed + 1))
            echo "FAIL $model $name: $(tail -1 "$dir/$name.out")"
            continue
          fi
          # dp = 2 with m microbatches runs the rows of 2m one-device ones.
          ref=one-m$m
          [ "$layout" = dp ] && ref=one-m$((2 * m))
          [ "$layout" = dp ] && [ ! -e "$dir/$ref.log" ] && \
            sh "$runs" "$bin" "$dir/model.mlir" "$dir" 2 "$ref:--microbatches $((2 * m))" > /dev/null
          if result=$(cd "$dir" && python3 "$compare" $tolerance "$ref.log" "$ref.safetensors" \
              "$name.log" "$name.safetensors"); then
            echo "ok   $model $result"
          else
            failed=$((failed + 1))
            echo "FAIL $model $result"
          fi
        done
      done
    done
  done
done
echo "$total runs, $failed failed (files in $work)"
[ "$failed" -eq 0 ]
