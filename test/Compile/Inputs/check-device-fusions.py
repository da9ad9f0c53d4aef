"""The prediction prices the CUDA device's fused groups as it runs them.

argv: the rt program (tpc-compile --emit mlir), the report of that compile
on a description whose runtime_device is cuda, the report of the same
compile on that description with runtime_device cpu, the descriptions'
bandwidth B, and optionally "compute" (compare the stage's compute time,
not the step: tensor parallelism's collectives are grouped and overlapped
otherwise on the cuda device). Both are memory-bound ideals
(make-memory-hardware.py: compute and launches free): every kernel costs
its bytes / B, so on one stage the two predictions must differ by exactly
the bytes the groups do not move, as often as their kernels run in a step
(the action list), / B.

Checked independently of the compiler, from the program text: each group is
one of the device's kinds (runtime/cuda/FusionPlan.h), of consecutive
kernels that hand their results on; its bytes not moved are its kernels'
operands and results less the group's outside buffers counted once (an
intermediate a later member reads is never written, but for a linear whose
gelu writes elsewhere); their sum is the report's. Prints the groups per
kind, then the candidates the report says the device refused (each a
kernel of the program, by index and opcode, in no group or, where a
partner was refused, last in its group) per reason.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rtprogram import Program  # noqa: E402

program = Program(sys.argv[1])
kernels = [(k.name, k.ins, k.outs, k.sizes) for k in program.kernels]
stages = program.stages

cuda = json.load(open(sys.argv[2]))["predicted"]
cpu = json.load(open(sys.argv[3]))["predicted"]
fusions = cuda["device_fusions"]
assert "device_fusions" not in cpu, "a cpu device has no fusions"

KINDS = {
    ("apply_mask", "add"): "dropout + add",
    ("add", "apply_mask", "add"): "bias + dropout + add",
    ("add", "add"): "bias + add",
    ("linear", "gelu"): "bias + gelu",
    ("linear_input_grad", "gelu_grad"): "input grad + gelu grad",
    ("linear", "add"): "product + add",
    ("linear_input_grad", "add"): "product + add",
    ("linear_weight_grad", "sum_to"): "weight grad + bias grad",
    ("linear_weight_grad_accumulate", "sum_to"): "weight grad + bias grad",
    ("layer_norm_param_grad", "layer_norm_input_grad"): "norm backward",
    ("layer_norm_param_grad", "layer_norm_input_grad", "add"): "norm backward + add",
    ("rms_norm_param_grad", "rms_norm_input_grad"): "norm backward",
    ("rms_norm_param_grad", "rms_norm_input_grad", "add"): "norm backward + add",
    ("layer_norm_input_grad", "add"): "norm input grad + add",
    ("rms_norm_input_grad", "add"): "norm input grad + add",
    ("layer_norm_param_grad", "layer_norm_input_grad", "apply_mask"): "norm backward + mask",
    ("layer_norm_param_grad", "layer_norm_input_grad", "add", "apply_mask"): "norm backward + add + mask",
    ("rms_norm_param_grad", "rms_norm_input_grad", "apply_mask"): "norm backward + mask",
    ("rms_norm_param_grad", "rms_norm_input_grad", "add", "apply_mask"): "norm backward + add + mask",
    ("layer_norm_input_grad", "add", "apply_mask"): "norm input grad + add + mask",
    ("rms_norm_input_grad", "add", "apply_mask"): "norm input grad + add + mask",
    ("cross_entropy", "cross_entropy_grad"): "loss + gradient",
    ("silu", "mul"): "silu + mul",
    ("mul", "silu_grad"): "mul + silu grad",
}
# A forward norm joins the residual add that ends a group, or an add alone.
for ops, kind in list(KINDS.items()) + [(("add",), "add")]:
    if ops[-1] == "add" and ops[0] in ("add", "apply_mask"):
        for norm in ("layer_norm", "rms_norm"):
            KINDS[ops + (norm,)] = kind + " + norm"
runs = program.runs


counts, not_moved, not_moved_per_step = {}, 0, 0
for group in fusions["groups"]:
    assert group == list(range(group[0], group[0] + len(group))), group
    ops = tuple(kernels[k][0] for k in group)
    assert ops in KINDS, ops
    counts[KINDS[ops]] = counts.get(KINDS[ops], 0) + 1
    # Each member after the head reads something an earlier member read or
    # wrote (the hand-over the device fuses).
    seen = set(kernels[group[0]][1]) | set(kernels[group[0]][2])
    for k in group[1:]:
        assert seen & set(kernels[k][1]), (ops, k)
        seen |= set(kernels[k][1]) | set(kernels[k][2])
    alone = sum(sum(kernels[k][3][v] for v in kernels[k][1] + kernels[k][2])
                for k in group)
    outside = program.group_bytes(group)
    not_moved += alone - outside
    not_moved_per_step += (alone - outside) * runs(group[0])

# A sum_squares whose squares the optimizer batch before it sums (the
# gradients' norm, only reported: after the updates) moves its partial sums
# and result alone.
squares = fusions.get("squares_in_updates", [])
for k in squares:
    assert program.squares_after_updates(k), k
    saved = kernels[k][3]
    alone = sum(saved[v] for v in kernels[k][1] + kernels[k][2])
    not_moved += alone - program.squares_bytes(k)
    not_moved_per_step += (alone - program.squares_bytes(k)) * runs(k)

assert not_moved == fusions["bytes_not_moved"], (not_moved, fusions["bytes_not_moved"])
# One stage: the step is the sum of its kernels' times (a pipeline's
# makespan is not: its groups are counted, not timed).
# With tensor parallelism (argv[5] "compute") the cuda device also issues
# runs of the layers' all_reduces as one group (priced as one) and overlaps
# them with other kernels than on a cpu: there the stage's compute is
# compared, not the step.
timed = sys.argv[5] if len(sys.argv) > 5 else "step"
assert timed in ("step", "compute"), timed
if timed == "compute" and not stages:
    diff = cpu["stages"][0]["compute_s"] - cuda["stages"][0]["compute_s"]
    expected = not_moved_per_step / float(sys.argv[4])
    assert abs(diff - expected) <= 1e-9 * cpu["step_time_s"], (diff, expected)
elif not stages:
    diff = cpu["step_time_s"] - cuda["step_time_s"]
    # The cuda device also runs the collectives on a communication stream:
    # what its kernels overlap comes off the step too (0 on one rank).
    overlapped = sum(s["overlapped_communication_s"]
                     for s in cuda["stages"])
    assert all(s["overlapped_communication_s"] == 0 for s in cpu["stages"])
    expected = not_moved_per_step / float(sys.argv[4]) + overlapped
    assert abs(diff - expected) <= 1e-9 * cpu["step_time_s"], (diff, expected)
print("ok: %d groups, %d bytes not moved, %s" % (
    len(fusions["groups"]), not_moved,
    "a pipeline (not timed)" if stages else
    "predicted %s less by their bytes / bandwidth" % timed))
for kind in sorted(counts):
    print("%s: %d" % (kind, counts[kind]))
if squares:
    print("sum_squares in the updates: %d, of %d gradients (%d bytes)" % (
        len(squares), sum(len(kernels[k][1]) for k in squares),
        sum(sum(kernels[k][3][v] for v in kernels[k][1]) for k in squares)))
# The candidates the device refused, by reason: each names a kernel of the
# program by its index and opcode, in no group; or, refused a partner
# ("K (op) + add", "+ apply_mask"), in no group or one where no such kernel
# follows it.
after = {}
for group in fusions["groups"]:
    for k, n in zip(group, group[1:] + [None]):
        after[k] = n
reasons = {}
for refusal in fusions["refused"]:
    m = re.match(r"kernel (\d+) \((\w+)\)([^:]*): (.*)", refusal)
    assert m, refusal
    k, op = int(m.group(1)), m.group(2)
    assert kernels[k][0] == op, refusal
    partner = m.group(3).strip(" +")
    if partner in ("", "next"):
        assert k not in after, refusal
    else:
        assert after.get(k) is None or kernels[after[k]][0] != partner, refusal
    reason = "%s%s: %s" % (op, m.group(3), m.group(4))
    reasons[reason] = reasons.get(reason, 0) + 1
for reason in sorted(reasons):
    print("refused %s (%d)" % (reason, reasons[reason]))
