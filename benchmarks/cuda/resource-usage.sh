#!/usr/bin/env bash
# benchmarks/cuda/resource-usage.sh [BUILD] [ARCH] [FILE.cu ...]: what ptxas
# gives each CUDA kernel of runtime/cuda/*.cu (or of the FILEs named there)
# for ARCH (default sm_90; HopperAttention.cu for sm_90a, its only
# architecture): registers per thread, spill stores/loads, stack and static
# shared memory, one line per kernel (demangled, sorted by registers), then
# the kernels that spill, then those whose wgmma ptxas serializes (C7520:
# a wgmma under a branch ptxas cannot prove the same for the whole
# warpgroup; C7514: an instruction between a wgmma and its wait reads
# accumulator registers, as a copy ptxas makes under register pressure
# can; either way it waits for every wgmma before the next, and the tensor
# cores never overlap the warpgroup's other work). Exits 1 when a kernel is
# serialized, 77 without nvcc.
# Compiles each .cu file once more with nvcc --resource-usage (the flags of
# BUILD's libtpcrt-cuda.so, default build/); no GPU needed. A kernel's
# registers times its block size must stay within the SM's 65536 (else the
# launch fails: "too many resources requested"); spills cost local-memory
# traffic.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
arch=${2:-sm_90}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[ -x "$nvcc" ] || { echo "no nvcc at $nvcc (set CUDACXX)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/report.py" <<'PY'
import re, subprocess, sys
rows, fn, spill, serialized = [], None, (0, 0), []
for line in sys.stdin:
    m = re.search(r"\((C7520|C7514)\).*in the function '(\S+)'", line)
    if m:
        serialized.append(m.group(2))
    m = re.search(r"Function properties for (\S+)", line)
    if m:
        fn, spill = m.group(1), (0, 0)
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and fn:
        spill = (int(m.group(1)), int(m.group(2)))
    m = re.search(r"Used (\d+) registers.*?(?:, (\d+) bytes smem)?", line)
    if m and fn and not fn.startswith("__internal"):
        smem = re.search(r"(\d+) bytes smem", line)
        rows.append((int(m.group(1)), spill, int(smem.group(1)) if smem else 0, fn))
        fn = None
def demangle(symbols):
    return subprocess.run(["c++filt"], input="\n".join(symbols),
                          capture_output=True, text=True).stdout.split("\n")
names = demangle(r[3] for r in rows)
print(f"{len(rows)} kernels")
print("regs spill st/ld   smem  kernel")
for (regs, (st, ld), smem, _), name in sorted(zip(rows, names)):
    print(f"{regs:>4} {st:>5}/{ld:<5} {smem:>6}  {name[:150]}")
spilling = [(r, n) for r, n in zip(rows, names) if r[1] != (0, 0)]
print(f"spilling: {len(spilling)}")
for (regs, (st, ld), _, _), name in spilling:
    print(f"  {name[:150]}: {st} bytes stored, {ld} loaded")
print(f"serialized wgmma: {len(serialized)}")
for name in demangle(serialized)[:len(serialized)]:
    print(f"  {name[:150]}")
sys.exit(1 if serialized else 0)
PY
files=("${@:3}")
[ ${#files[@]} -gt 0 ] || files=("$root"/runtime/cuda/*.cu)
for cu in "${files[@]}"; do
  [ -f "$cu" ] || cu=$root/runtime/cuda/$cu
  # The wgmma kernels exist for sm_90a alone (runtime/CMakeLists.txt).
  a=$arch
  [ "$(basename "$cu")" = HopperAttention.cu ] && a=sm_90a
  "$nvcc" -DTPCRT_HAVE_CUDNN=1 -I"$root/runtime/cuda" \
    -I"$root/runtime/include" -isystem="$build/runtime/generated" -O3 \
    -DNDEBUG "--generate-code=arch=compute_${a#sm_},code=[$a]" \
    -Xcompiler=-fPIC --expt-relaxed-constexpr -std=c++17 --resource-usage \
    -x cu -c "$cu" -o "$out/$(basename "$cu").o" 2>&1
done | python3 "$out/report.py"
