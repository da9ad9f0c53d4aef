#!/usr/bin/env python3
"""benchmarks/cuda/sass-loops.py OBJECT.o [FILTER]: the instructions of each
attention kernel's main loop, from its SASS (cuobjdump -sass; cuobjdump and
nvdisasm from the CUDA toolkit or the nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm wheels on PATH; exit 77 without them). No GPU needed.

A kernel's main loop is the backward branch's span holding the most tensor
core instructions (HGMMA on sm_90a, HMMA on mma.sync). Per kernel it prints
the loop's instruction count and the classes that tell where a tile's issue
slots go: MUFU (exp2), FSETP (exp2f's range checks), FSEL (masks), ISETP
and IMAD (indices and bounds), FMUL/FFMA/FADD, the tensor instructions.
Two warps share each SM sub-partition's one issue slot per cycle, so a
loop's count is a floor on a tile's time wherever the tensor cores would be
quicker: fewer instructions per tile is a speed-up that needs no GPU to
count (what it is worth in time, a GPU says)."""
import re
import shutil
import subprocess
import sys

if not shutil.which("cuobjdump") or not shutil.which("nvdisasm"):
    print("no cuobjdump/nvdisasm on PATH")
    sys.exit(77)
sass = subprocess.run(["cuobjdump", "-sass", sys.argv[1]], capture_output=True,
                      text=True, check=True).stdout
want = sys.argv[2] if len(sys.argv) > 2 else ""
inst = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\S*)\s*([^;]*);")
classes = ["MUFU", "FSETP", "FSEL", "ISETP", "IMAD", "FMUL", "FFMA", "FADD",
           "FMNMX", "F2FP", "SHFL", "LDGSTS", "BAR"]


def demangle(name):
    return subprocess.run(["c++filt"], input=name, capture_output=True,
                          text=True).stdout.strip()


print(f"{'loop':>5} {'mma':>4} " + " ".join(f"{c:>6}" for c in classes) + "  kernel")
for fn in re.split(r"\n\s*Function : ", sass)[1:]:
    name = demangle(fn.split("\n", 1)[0].strip())
    if want not in name:
        continue
    body = [(int(m.group(1), 16), m.group(3), m.group(4), m.group(5))
            for m in inst.finditer(fn)]
    loops = []
    for pc, op, _, args in body:
        t = re.match(r"\s*(0x[0-9a-f]+)", args)
        if op == "BRA" and t and int(t.group(1), 16) < pc:
            span = [b for b in body if int(t.group(1), 16) <= b[0] <= pc]
            mma = sum(b[1] in ("HGMMA", "HMMA") for b in span)
            loops.append((mma, -len(span), span))
    if not loops:
        continue
    mma, _, span = max(loops, key=lambda l: (l[0], l[1]))
    counts = {c: sum(b[1] == c for b in span) for c in classes}
    short = re.sub(r"^void tpcrt::cuda::attn::|\(.*$", "", name)
    print(f"{len(span):>5} {mma:>4} " +
          " ".join(f"{counts[c]:>6}" for c in classes) + f"  {short}")
