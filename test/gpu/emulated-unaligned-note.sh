#!/bin/sh
# test/gpu/emulated-unaligned-note.sh BUILD WORK: --device cuda says, once,
# when an executable's 16-bit matrix products have rows of no whole 16
# bytes (cuBLASLt runs them off its tensor-core fast kernels): a bf16 GPT-2
# tiny over a vocabulary of 250 compiled for the CPU (its LM head's
# products over 250 rows of 2 bytes) gets the note, naming how many and
# the first; compiled with --target cuda (250 padded to 256) it does not.
# Through the CUDA backend compiled for the host (libtpcrt-cuda-emulated.so).
# ctest: runtime.CudaEmulatedUnalignedNote.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
backend=$build/lib/libtpcrt-cuda-emulated.so
[ -f "$backend" ] || { echo "no $backend"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
python3 -c "import json, sys; c = json.load(open(sys.argv[1])); \
c['vocab_size'] = 250; json.dump(c, open('v250.json', 'w'))" \
  "$root/examples/configs/gpt2-tiny.json" || exit 1
"$build/bin/tpc-import" v250.json --batch 2 --seq 16 --dtype bf16 \
  -o m.mlir 2>/dev/null || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
for target in cpu cuda; do
  "$build/bin/tpc-compile" m.mlir --train --target $target \
    -o $target.tpcx 2>/dev/null || exit 1
  TPCRT_CUDA_BACKEND="$backend" "$build/bin/tpc-run" $target.tpcx \
    --device cuda --init-seed 1 --synthetic-seed 1 --steps 2 \
    >$target.out 2>$target.err || { cat $target.err; exit 1; }
done
grep 'rows of no whole 16 bytes' cpu.err
[ "$(grep -c 'rows of no whole 16 bytes' cpu.err)" = 1 ] ||
  fail "--target cpu: not one note: $(cat cpu.err)"
grep -Eq '^tpcrt: note: [1-9][0-9]* of [0-9]+ 16-bit matrix products have rows of no whole 16 bytes \(kernel [0-9]+ linear[a-z_]*: a row of 250 elements\)' cpu.err ||
  fail "--target cpu: the note does not name the count and the 250-element row: $(cat cpu.err)"
! grep -q 'rows of no whole 16 bytes' cuda.err ||
  fail "--target cuda (padded to 256): a note: $(cat cuda.err)"
echo "emulated-unaligned-note.sh: $failures failures"
[ "$failures" -eq 0 ]
