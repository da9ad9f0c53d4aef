#!/usr/bin/env python3
"""Checks a pipeline report's peak activations against the schedule's formula.

Usage: check-stage-memory.py REPORT.json

For each stage i of the report (INTERFACE.md's "stages"), the microbatches
whose stash it holds at once, times its layers' stash per microbatch
(per_layer.activation_bytes), is the formula (Korthikanti et al. 2022):
  gpipe       m                         (every forward before any backward)
  1f1b        min(m, p - i)             (stage 0 holds p, i.e. L layers)
  interleaved-1f1b, stage 0: L (1 + (p - 1) / (p v)) layers
The planned peak_activation_bytes must lie between the formula and the
formula plus, per microbatch held, what the stage stashes outside the
layers (the first: the embedding's dropout mask, one byte per element; the
last: the final norm's input and the logits, f32), plus two layers' stash
of transients (the activations being computed and not stashed, the
gradients between B and W). Prints one line per stage checked; exit 1 if
one is out.
"""

import json
import sys


def main():
    with open(sys.argv[1]) as f:
        report = json.load(f)
    schedule = report["schedule"]
    m = report["microbatches"]
    p = report["mesh"]["pp"]
    v = report["virtual_stages"]
    layer = report["per_layer"]["activation_bytes"]
    total_layers = report["model"]["layers"]
    failed = False
    for stage in report["stages"]:
        i = stage["stage"]
        first, last = stage["layers"]
        layers = last - first + 1
        if schedule == "gpipe":
            microbatches = m
            held = m * layers
        elif schedule == "1f1b":
            microbatches = min(m, p - i)
            held = microbatches * layers
        elif schedule == "interleaved-1f1b" and i == 0:
            held = total_layers * (1 + (p - 1) / (p * v))
            microbatches = held / layers
        else:
            continue
        model = report["model"]
        positions = model["microbatch_size"] * model["seq"]
        outside = 0
        if i == 0:
            outside += positions * model["hidden"]
        if i == len(report["stages"]) - 1:
            outside += positions * (model["hidden"] + model["vocab"]) * 4
        low = held * layer
        high = (held + 2) * layer + microbatches * outside
        peak = stage["peak_activation_bytes"]
        ok = low <= peak <= high
        failed |= not ok
        print("%s %s stage %d: peak activations %d bytes = %.2f layers' stash, "
              "formula %.2f layers (at most %.2f with what is outside the "
              "layers and transients)"
              % ("ok" if ok else "FAIL", schedule, i, peak, peak / layer, held,
                 high / layer))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
