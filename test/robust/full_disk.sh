#!/bin/sh
# full_disk.sh BIN_DIR SRC_ROOT WORK_DIR
#
# Issue 18: the disk fills during a checkpoint. A GPT-2 training run saves a
# checkpoint directory on a small tmpfs that holds one checkpoint but not
# two; the next save (a checkpoint is written beside the previous one and
# exchanged with it once whole) runs out of space: tpc-run exits 1 with
# `error: ... No space left on device`, the previous checkpoint is intact
# (byte for byte, and a run resumes from it), and nothing of the failed save
# is left. Needs root to mount the tmpfs: exits 77 (skipped) where mounting
# is not allowed (one rank: no MPI needed).
set -u
bin=$1
src=$2
work=$3
. "$src/runtime/test/run_helpers.sh"
fresh_dir "$work"
mnt="$work/disk"
mkdir -p "$mnt"
"$bin/tpc-import" "$src/examples/configs/gpt2-tiny.json" --batch 4 --seq 32 \
  -o m.mlir || exit 1
"$bin/tpc-compile" m.mlir --train -o m.tpcx 2>/dev/null || exit 1
# The size of one checkpoint, saved on the ordinary disk.
"$bin/tpc-run" m.tpcx --init-seed 1 --synthetic-seed 1 --steps 1 \
  --save-checkpoint probe >/dev/null 2>&1 || exit 1
size=$(du -sk probe | cut -f1)
# Room for one checkpoint and a half.
if ! mount -t tmpfs -o size=$((size * 3 / 2 + 64))k tmpfs "$mnt" 2>/dev/null; then
  echo "cannot mount a tmpfs here (not root?): skipped"
  exit 77
fi
trap 'cd /; umount "$mnt" 2>/dev/null' EXIT
"$bin/tpc-run" m.tpcx --init-seed 1 --synthetic-seed 1 --steps 1 \
  --save-checkpoint "$mnt/ckpt" >first.out 2>first.err ||
  fail "the first save does not fit: $(cat first.err)"
(cd "$mnt/ckpt" && sha256sum * | sort) > before.sums
"$bin/tpc-run" m.tpcx --load-checkpoint "$mnt/ckpt" --synthetic-seed 1 \
  --steps 1 --save-checkpoint "$mnt/ckpt" >second.out 2>second.err
rc=$?
[ "$rc" -eq 1 ] || fail "the save that fills the disk: exit status $rc"
grep -q '^error: .*No space left on device' second.err ||
  fail "no 'No space left on device' error: $(cat second.err)"
(cd "$mnt/ckpt" && sha256sum * | sort) > after.sums
cmp -s before.sums after.sums || fail "the previous checkpoint changed"
left=$(ls "$mnt" | grep -v '^ckpt$')
[ -z "$left" ] || fail "the failed save left: $left"
"$bin/tpc-run" m.tpcx --load-checkpoint "$mnt/ckpt" --synthetic-seed 1 \
  --steps 1 >resume.out 2>resume.err ||
  fail "no run resumes from the previous checkpoint: $(cat resume.err)"
echo "full disk: exit status $rc, $(grep -o 'No space left on device' second.err | head -1); previous checkpoint intact; $failures failures"
[ "$failures" -eq 0 ]
