#!/usr/bin/env python3
"""Compares tpc-run training runs of one model compiled differently.

Usage: compare-runs.py TOLERANCE A.log A.safetensors B.log B.safetensors ...

Each run is its stdout (the `step k loss .. grad_norm .. lr ..` lines) and its
--dump-grads file. Every run's losses, gradient norms and learning rates must
equal the first run's, and every gradient the first run's by the norm-wise
relative error of INTERFACE.md, within TOLERANCE. Prints one line per
comparison; exit status 1 on a difference. Standard library only.
"""

import json
import math
import re
import struct
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (header_size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_size])
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit("%s: %s is %s, expected F32" % (path, name, info["dtype"]))
        begin, end = info["data_offsets"]
        raw = data[8 + header_size + begin:8 + header_size + end]
        tensors[name] = struct.unpack("<%df" % (len(raw) // 4), raw)
    return tensors


def read_steps(path):
    with open(path) as f:
        return [tuple(float(v) for v in m.groups()) for m in re.finditer(
            r"^step \d+ loss (\S+) grad_norm (\S+) lr (\S+)", f.read(), re.M)]


def relative(a, b):
    diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    norm = math.sqrt(sum(y * y for y in b))
    return diff / norm if norm else diff


def main():
    tolerance = float(sys.argv[1])
    runs = [(sys.argv[i], sys.argv[i + 1]) for i in range(2, len(sys.argv), 2)]
    ref_steps, ref_grads = read_steps(runs[0][0]), read_safetensors(runs[0][1])
    if not ref_steps:
        sys.exit("%s: no step lines" % runs[0][0])
    failed = False
    for log, grads_path in runs[1:]:
        steps, grads = read_steps(log), read_safetensors(grads_path)
        if len(steps) != len(ref_steps) or set(grads) != set(ref_grads):
            print("FAIL %s: %d steps and %d gradients, expected %d and %d"
                  % (log, len(steps), len(grads), len(ref_steps), len(ref_grads)))
            failed = True
            continue
        worst_step = max(abs(x - y) / abs(y) for s, r in zip(steps, ref_steps)
                         for x, y in zip(s, r))
        worst_grad = max(relative(grads[n], ref_grads[n]) for n in ref_grads)
        ok = worst_step <= tolerance and worst_grad <= tolerance
        failed |= not ok
        print("%s %s: %d steps, %d gradients equal to %s (worst step %.1e, "
              "worst gradient %.1e)" % ("ok" if ok else "FAIL", log, len(steps),
                                        len(grads), runs[0][0], worst_step,
                                        worst_grad))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
