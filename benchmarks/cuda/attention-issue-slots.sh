#!/usr/bin/env bash
# benchmarks/cuda/attention-issue-slots.sh [BUILD] [REV ...]: instructions a
# thread issues per key tile (forward, dQ) or query step (dK/dV) in the
# wgmma attention kernels' main loops, on the path an interior tile takes:
# nothing masked, every row loaded, no dropout (the forward's Drop=true
# instantiations keep theirs). For the working tree and each git REV given:
# runtime/cuda copied, those branches forced by sed (the mask branch never,
# the whole-tile and whole-load branches always, a tile after the first,
# p.dropout.enabled false),
# HopperAttention.cu compiled for sm_90a, its SASS counted by sass-loops.py.
# Then the same with dropout on (DROPOUT=0 skips it): p.dropout.enabled
# true. Both times every row's stream starts on a block of 16 (four draws a
# hash; at revisions before them, even: the paired draws; the forward's
# Drop=true instantiations draw in both), and the hash loops,
# which the kernels unroll twice, are unrolled whole, so that a loop's
# count is what a tile issues (the kernels' own take about 2 instructions
# more a hash: their loop's counter and branch). Where a revision has no
# such branch the sed changes nothing and its loop is that path already (a
# revision whose hash loops are rolled counts one trip of each, and its
# per-element fallback too). Needs nvcc and cuobjdump/nvdisasm on PATH (the
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
count() { # count LABEL DIR-holding-cuda-and-include [dropout]
  local cuda=$2/cuda dropout=false
  [ "${3:-}" = dropout ] && dropout=true
  sed -i 's/^  if (mask) {$/  if (false) {/; s/if (row0 + Rows <= rows) {/if (true) {/;
          s/^  if (whole)$/  if (true)/; s/if ((first \& 1) == 0) {/if (true) {/;
          s/^    if (t > 0) {$/    if (true) {/;
          s/if (((dropout\.firstIndex | static_cast<uint64_t>(seqK)) \& 1) == 0) {/if (true) {/;
          s/if ((first \& 9) == 0) {/if (true) {/; s/if ((rowStarts \& 1) != 0) {/if (false) {/;
          s/if ((rowStarts \& 15) == 0) {/if (true) {/;
          s/p\.dropout\.enabled/'$dropout'/g; s/^#pragma unroll 2$/#pragma unroll/' \
    "$cuda/FlashAttention.cuh" "$cuda/HopperAttention.cuh"
  "$nvcc" -DTPCRT_HAVE_CUDNN=1 -I"$cuda" -I"$2/include" \
    -isystem="$build/runtime/generated" -O3 -DNDEBUG \
    "--generate-code=arch=compute_90a,code=[sm_90a]" -Xcompiler=-fPIC \
    --expt-relaxed-constexpr -std=c++17 -x cu -c "$cuda/HopperAttention.cu" \
    -o "$2/h.o" 2>"$2/nvcc.log" || {
    cat "$2/nvcc.log"
    exit 1
  }
  echo "== $1${3:+ (with dropout)}"
  python3 "$root/benchmarks/cuda/sass-loops.py" "$2/h.o" bfloat16
}
modes=("")
[ "${DROPOUT:-1}" = 0 ] || modes+=(dropout)
for mode in "${modes[@]}"; do
  rm -rf "$out/tree" && mkdir -p "$out/tree"
  cp -r "$root/runtime/cuda" "$root/runtime/include" "$out/tree/"
  count "working tree" "$out/tree" $mode
  for rev in "$@"; do
    rm -rf "${out:?}/$rev" && mkdir -p "$out/$rev"
    git -C "$root" archive "$rev" runtime/cuda runtime/include |
      tar -x -C "$out/$rev"
    count "$rev" "$out/$rev/runtime" $mode
  done
done
