#!/usr/bin/env bash
# benchmarks/cuda/attention-issue-slots.sh [BUILD] [REV ...]: instructions a
# thread issues per key tile (forward, dQ) or query step (dK/dV) in the
# wgmma attention kernels' main loops, on the path an interior tile takes:
# nothing masked, every row loaded, no dropout (the forward's Drop=true
# instantiations keep theirs). For the working tree and each git REV given:
# runtime/cuda copied, those branches forced by sed (the mask branch never,
# the whole-tile and whole-load branches always, p.dropout.enabled false),
# HopperAttention.cu compiled for sm_90a, its SASS counted by sass-loops.py.
# Where a revision has no such branch the sed changes nothing and its loop is
# that path already. Needs nvcc and cuobjdump/nvdisasm on PATH (the
# toolkit's or the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels);
# exit 77 without them. No GPU: counts, not times.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
shift || true
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] && command -v cuobjdump >/dev/null &&
  command -v nvdisasm >/dev/null || {
  echo "needs nvcc, cuobjdump and nvdisasm"
  exit 77
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # count LABEL DIR-holding-cuda
  local cuda=$2/cuda
  sed -i 's/^  if (mask) {$/  if (false) {/; s/if (row0 + Rows <= rows) {/if (true) {/;
          s/^  if (whole)$/  if (true)/; s/p\.dropout\.enabled/false/g' \
    "$cuda/FlashAttention.cuh" "$cuda/HopperAttention.cuh"
  "$nvcc" -DTPCRT_HAVE_CUDNN=1 -I"$cuda" -I"$root/runtime/include" \
    -isystem="$build/runtime/generated" -O3 -DNDEBUG \
    "--generate-code=arch=compute_90a,code=[sm_90a]" -Xcompiler=-fPIC \
    --expt-relaxed-constexpr -std=c++17 -x cu -c "$cuda/HopperAttention.cu" \
    -o "$2/h.o" 2>"$2/nvcc.log" || {
    cat "$2/nvcc.log"
    exit 1
  }
  echo "== $1"
  python3 "$root/benchmarks/cuda/sass-loops.py" "$2/h.o" bfloat16
}
mkdir -p "$out/tree" && cp -r "$root/runtime/cuda" "$out/tree/cuda"
count "working tree" "$out/tree"
for rev in "$@"; do
  mkdir -p "$out/$rev"
  git -C "$root" archive "$rev" runtime/cuda | tar -x -C "$out/$rev"
  count "$rev" "$out/$rev/runtime"
done
