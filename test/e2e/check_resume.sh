#!/bin/sh
# A training run resumed from a checkpoint continues bit-identically to an
# uninterrupted one: GPT-2 with dropout 0.1 (so the random stream must resume
# too), two microbatches, AdamW, batches drawn from a token file (so the data
# position must resume too). Six steps in one run against three + three; the
# step lines (without tokens_per_s, a timing) and the final checkpoints must be
# identical: checkpoint directories (Hugging Face's files and tpc's training
# state) file for file, and the same through single .safetensors files.
#
#   check_resume.sh BIN_DIR SRC_ROOT WORK_DIR
set -eu
bin=$1 src=$2 work=$3/resume
rm -rf "$work" && mkdir -p "$work"
"$bin/tpc-import" "$src/examples/configs/gpt2-tiny.json" --batch 4 --seq 32 \
  --dropout 0.1 -o "$work/model.mlir"
"$bin/tpc-compile" "$work/model.mlir" -o "$work/model.tpcx" --train \
  --optimizer adamw --lr 3e-3 --microbatches 2 --seed 5 2>/dev/null
run() {
  "$bin/tpc-run" "$work/model.tpcx" --data "$src/examples/data/train.bin" \
    --data-seed 11 "$@" | sed -n 's/^\(step .*\) tokens_per_s .*/\1/p'
}
run --init-seed 3 --steps 6 --save-checkpoint "$work/full.ckpt" > "$work/full.txt"
run --init-seed 3 --steps 3 --save-checkpoint "$work/half.ckpt" > "$work/first.txt"
run --load-checkpoint "$work/half.ckpt" --steps 3 --save-checkpoint "$work/resumed.ckpt" \
  > "$work/second.txt"
cat "$work/first.txt" "$work/second.txt" > "$work/split.txt"
cat "$work/full.txt"
if [ "$(wc -l < "$work/full.txt")" -ne 6 ]; then
  echo "FAIL: expected 6 step lines"; exit 1
fi
if ! cmp -s "$work/full.txt" "$work/split.txt"; then
  echo "FAIL: the resumed run's steps differ:"; diff "$work/full.txt" "$work/split.txt"; exit 1
fi
if ! diff -r "$work/full.ckpt" "$work/resumed.ckpt" >/dev/null; then
  echo "FAIL: the resumed run's final checkpoint differs from the uninterrupted run's"; exit 1
fi
run --init-seed 3 --steps 3 --save-checkpoint "$work/half.safetensors" > /dev/null
run --load-checkpoint "$work/half.safetensors" --steps 3 \
  --save-checkpoint "$work/resumed.safetensors" > "$work/second-file.txt"
if ! cmp -s "$work/second.txt" "$work/second-file.txt" ||
   ! run --load-checkpoint "$work/half.ckpt" --steps 3 \
       --save-checkpoint "$work/full.safetensors" > /dev/null ||
   ! cmp -s "$work/resumed.safetensors" "$work/full.safetensors"; then
  echo "FAIL: resumed through single files, the run differs"; exit 1
fi
echo "ok: steps 4-6 and the final checkpoint are identical after resuming"
