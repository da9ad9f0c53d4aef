"""The prediction prices the CUDA device's fused groups as it runs them.

argv: the rt program (tpc-compile --emit mlir), the report of that compile
on a description whose runtime_device is cuda, the report of the same
compile on that description with runtime_device cpu, and the descriptions'
bandwidth B. Both are memory-bound ideals (make-memory-hardware.py: compute
and launches free): every kernel costs its bytes / B, so on one stage the
two predictions must differ by exactly the bytes the groups do not move, as
often as their kernels run in a step (the action list), / B.

Checked independently of the compiler, from the program text: each group is
one of the device's kinds (runtime/cuda/FusionPlan.h), of consecutive
kernels that hand their results on; its bytes not moved are its kernels'
operands and results less the group's outside buffers counted once (an
intermediate a later member reads is never written, but for a linear whose
gelu writes elsewhere); their sum is the report's. Prints the groups per
kind.
"""
import json
import re
import sys

SIZES = {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1}


def memref_bytes(t):
    parts = t.split("x")
    n = 1
    for p in parts[:-1]:
        n *= int(p)
    return n * SIZES[parts[-1]]


kernels, offsets = [], {}
# Runs of each kernel in a step: the actions' functions (one stage), else 1.
functions, actions, stages = [], None, False
for line in open(sys.argv[1]):
    if "rt.program" in line:
        functions = [(int(f), int(c)) for c, f in re.findall(
            r"\{count = (\d+) : i64, first = (\d+) : i64", line)]
        m = re.search(r"\bactions = array<i64: ([^>]*)>", line)
        if m:
            actions = [int(v) for v in m.group(1).split(",")][0::3]
        stages = "stage_actions" in line
    m = re.match(r"\s*(%\w+) = rt\.alloc(?: pool \d+)? offset (\d+)", line)
    if m:
        offsets[m.group(1)] = int(m.group(2))
    m = re.match(r"\s*rt\.kernel (\w+)\(([^)]*)\) -> \(([^)]*)\)", line)
    if not m:
        continue
    ins = [v.strip() for v in m.group(2).split(",") if v.strip()]
    outs = [v.strip() for v in m.group(3).split(",") if v.strip()]
    sig = line.rsplit(" : ", 1)[1]
    tin, tout = sig.split(" -> ")
    types_in = re.findall(r"memref<([^>]*)>", tin)
    types_out = re.findall(r"memref<([^>]*)>", tout)
    sizes = {}
    for v, t in zip(ins + outs, types_in + types_out):
        sizes[v] = memref_bytes(t) if t else 4
    kernels.append((m.group(1), ins, outs, sizes))

cuda = json.load(open(sys.argv[2]))["predicted"]
cpu = json.load(open(sys.argv[3]))["predicted"]
fusions = cuda["device_fusions"]
assert "device_fusions" not in cpu, "a cpu device has no fusions"

KINDS = {
    ("apply_mask", "add"): "dropout + add",
    ("linear", "gelu"): "bias + gelu",
    ("linear_input_grad", "gelu_grad"): "input grad + gelu grad",
    ("linear_weight_grad", "sum_to"): "weight grad + bias grad",
    ("linear_weight_grad_accumulate", "sum_to"): "weight grad + bias grad",
    ("layer_norm_param_grad", "layer_norm_input_grad"): "norm backward",
    ("layer_norm_param_grad", "layer_norm_input_grad", "add"): "norm backward + add",
    ("rms_norm_param_grad", "rms_norm_input_grad"): "norm backward",
    ("rms_norm_param_grad", "rms_norm_input_grad", "add"): "norm backward + add",
    ("cross_entropy", "cross_entropy_grad"): "loss + gradient",
}
def runs(k):
    if actions is None:
        return 1
    return sum(1 for f in actions
               if functions[f][0] <= k < functions[f][0] + functions[f][1])


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
    head_name, head_ins, head_outs, _ = kernels[group[0]]
    # A linear's result is written (the aux) unless the gelu writes over it.
    head_written = head_name == "linear" and offsets.get(head_outs[0]) != offsets.get(
        kernels[group[1]][2][0])
    alone = outside = 0
    written, counted = set(), set()
    later = set()
    for k in group[1:]:
        later |= set(kernels[k][1])
    for i, k in enumerate(group):
        _, ins, outs, sizes = kernels[k]
        alone += sum(sizes[v] for v in ins + outs)
        for v in ins:
            if v not in written and v not in counted:
                counted.add(v)
                outside += sizes[v]
        for v in outs:
            written.add(v)
            intermediate = i + 1 < len(group) and v in later and not head_written
            if not intermediate and v not in counted:
                counted.add(v)
                outside += sizes[v]
    not_moved += alone - outside
    not_moved_per_step += (alone - outside) * runs(group[0])

assert not_moved == fusions["bytes_not_moved"], (not_moved, fusions["bytes_not_moved"])
# One stage: the step is the sum of its kernels' times (a pipeline's
# makespan is not: its groups are counted, not timed).
diff = cpu["step_time_s"] - cuda["step_time_s"]
if not stages:
    expected = not_moved_per_step / float(sys.argv[4])
    assert abs(diff - expected) <= 1e-9 * cpu["step_time_s"], (diff, expected)
print("ok: %d groups, %d bytes not moved, %s" % (
    len(fusions["groups"]), not_moved,
    "a pipeline (not timed)" if stages else
    "predicted step less by their bytes / bandwidth"))
for kind in sorted(counts):
    print("%s: %d" % (kind, counts[kind]))
