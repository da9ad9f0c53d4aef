"""Tabulates the collectives of a partitioned training step, for FileCheck.

Reads the output of `dist-partition` (printed with --mlir-print-local-scope)
on stdin and prints, for @train_step, one line per group of collectives:

    <phase> <layer>: <kind> [<axes>] x<count>

The phase and layer are those of the op each collective serves, which its
location names (dist-partition inserts it right before that op, or before
the ops that replace it): `step` when that op is one of the driver's
once-per-step ops (loss mean, target count, global norm, optimizer,
return), else `forward` before the step's first `tpc.cross_entropy_grad`
(one microbatch's F comes first), else `backward`. The layer is the
`tpc.layer` of the next op that is not a collective, `-` outside the
layers.
shard_slice moves no data and is left out. This script only counts; the
expected counts are in the tests.
"""

import collections
import re
import sys

COLLECTIVE = re.compile(
    r"dist\.(all_reduce|all_gather|reduce_scatter|all_to_all|shard_slice)"
    r" .*? axes \[([^\]]*)\].* loc\(\"([a-z_]+\.[a-z_]+)")
OP = re.compile(r"^\s*(?:%[^=]*= )?([a-z_]+\.[a-z_]+)")
LAYER = re.compile(r"tpc\.layer = (\d+)")
DRIVER = {"tpc.loss_mean", "tpc.count_targets", "tpc.inverse_count",
          "tpc.sum_squares", "tpc.clip_coefficient", "tpc.lr_schedule",
          "tpc.adamw_update", "tpc.sgd_update", "func.return"}


def main():
    text = sys.stdin.read()
    start = text.index("func.func @train_step")
    counts = collections.Counter()
    pending = []
    backward = False
    for line in text[start:].splitlines()[1:]:
        collective = COLLECTIVE.search(line)
        if collective:
            if collective.group(1) != "shard_slice":
                pending.append(collective.groups())
            continue
        op = OP.match(line)
        if not op:
            continue
        name = op.group(1)
        if name == "tpc.cross_entropy_grad":
            backward = True
        layer = LAYER.search(line)
        for kind, axes, served in pending:
            phase = ("step" if served in DRIVER
                     else "backward" if backward else "forward")
            counts[(phase, layer.group(1) if layer else "-", kind, axes)] += 1
        pending = []
        if name == "func.return":
            break
    order = {"forward": 0, "backward": 1, "step": 2}
    for (phase, layer, kind, axes), count in sorted(
            counts.items(), key=lambda item: (order[item[0][0]],) + item[0][1:]):
        print(f"{phase} {layer}: {kind} [{axes}] x{count}")


if __name__ == "__main__":
    main()
