"""The prediction replays the CUDA device's communication stream.

argv: the rt program (tpc-compile --emit mlir, one stage), the report of
that compile on a description whose runtime_device is cuda, the
description's memory bandwidth B and link bandwidth X
(make-memory-hardware.py: every kernel costs its bytes / B (an
embedding_grad_accumulate the table rows its ids hit, read and written,
besides dY and the ids), a fused group
its outside bytes / B, a copy onto its own bytes (a reshape whose operand
the memory plan handed over to its result) nothing, as the devices skip
it; a collective over n ranks of one node costs
factor(n) * bytes / X, with no latency).

Replayed here from the program text, as the device runs it
(runtime/cuda/HazardTracker.h, CudaDevice.cpp): a collective goes on its
communicator's stream (one per group of mesh axes) when the kernels before
it are done and the stream's previous collective is; a kernel first waits
for the collectives in flight
whose bytes (arena offsets, a pooled buffer's copy of its action's slot)
its own meet: it reads or writes what one writes, or writes what one
reads; those retire. A run of consecutive all_reduces of one group (and
function) is one NCCL group on the device (CudaDevice::planReductionRuns):
each member in flight (a slot) until all of the run is done. With 256 in
flight, the next retires
the oldest, which the compute stream waits for. The step ends when every
stream is done.
The report's step, exposed communication (communication_s),
overlapped_communication_s and each kind of kernel's seconds (kernel_s: an
opcode, a fused group's joined by '+', or a batch's "<opcodes> batch") must
be the replay's.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from rtprogram import Program  # noqa: E402

EVENT_SLOTS = 256
# Where each collective's axes begin among its ints, and which buffer's
# bytes it is priced by (operand or result).
COLLECTIVES = {"all_reduce": (0, "in"), "all_gather": (1, "out"),
               "reduce_scatter": (1, "in"), "all_to_all": (2, "in")}

program = Program(sys.argv[1])
assert not program.stages, "one stage only"
report = json.load(open(sys.argv[2]))["predicted"]
memory, link = float(sys.argv[3]), float(sys.argv[4])
kernels = program.kernels
axes = list(program.mesh.values())

sizes = {}
for kernel in kernels:
    sizes.update(kernel.sizes)
unplanned = {}


def span(v, slot):
    if v not in program.offsets:
        begin = unplanned.setdefault(v, (1 << 62) + len(unplanned) * (1 << 40))
        return (begin, begin + sizes[v])
    begin = program.offsets[v]
    if v in program.pools:
        slots, stride = program.pool_slots[program.pools[v]]
        begin += (slot % slots) * stride
    elif v in program.copies:
        aligned = (sizes[v] + 63) // 64 * 64
        return (begin, begin + (program.copies[v] - 1) * aligned + sizes[v])
    return (begin, begin + sizes[v])


def meets(a, b):
    return any(x[0] < y[1] and y[0] < x[1] for x in a for y in b)


# Each kernel's own time: a fused group's at its tail, its others free; a
# copy onto its own bytes is skipped.
cost = [0.0 if program.skipped(i) else k.bytes_moved() / memory
        for i, k in enumerate(kernels)]
kind = [k.name for k in kernels]
for group in report.get("device_fusions", {}).get("groups", []):
    for k in group:
        cost[k] = 0.0
    cost[group[-1]] = program.group_bytes(group) / memory
    kind[group[-1]] = "+".join(kernels[k].name for k in group)
# A batch (casts and zeros launched as one): its bytes at its last member,
# named by its opcodes, each once, and " batch".
for batch in report.get("device_fusions", {}).get("batches", []):
    for k in batch:
        cost[k] = 0.0
    cost[batch[-1]] = program.group_bytes(batch) / memory
    names = []
    for k in batch:
        if kernels[k].name not in names:
            names.append(kernels[k].name)
    kind[batch[-1]] = ",".join(names) + " batch"
# A sum_squares whose squares the optimizer batch before it summed: its
# partial sums' addition alone.
for k in report.get("device_fusions", {}).get("squares_in_updates", []):
    assert program.squares_after_updates(k), k
    cost[k] = program.squares_bytes(k) / memory
kind_seconds = {}


def charge(k, seconds):
    if seconds > 0:
        kind_seconds[kind[k]] = kind_seconds.get(kind[k], 0.0) + seconds


def group_axes(kernel):
    return tuple(kernel.ints[COLLECTIVES[kernel.name][0]:])


def collective_seconds(kernel):
    priced_by = COLLECTIVES[kernel.name][1]
    n = 1
    for axis in group_axes(kernel):
        n *= axes[axis]
    if n == 1:
        return 0.0
    factor = 2 * (n - 1) / n if kernel.name == "all_reduce" else (n - 1) / n
    buffer = kernel.ins[0] if priced_by == "in" else kernel.outs[0]
    return factor * kernel.sizes[buffer] / link


def function_of(k):
    for f, (first, count) in enumerate(program.functions):
        if first <= k < first + count:
            return f
    return -1


# A run of all_reduces (consecutive, one group, one function): its first
# member takes the run's time on the stream, the others none after it; each
# is in flight until the run is done.
run_seconds, first = {}, None
for k, kernel in enumerate(kernels):
    if kernel.name != "all_reduce":
        first = None
        continue
    if (first is not None and kernels[k - 1].name == "all_reduce" and
            group_axes(kernels[k - 1]) == group_axes(kernel) and
            function_of(k - 1) == function_of(k)):
        run_seconds[first] += collective_seconds(kernel)
        run_seconds[k] = 0.0
        continue
    first = k
    run_seconds[k] = collective_seconds(kernel)

now = exposed = stream_busy = 0.0
stream_free = {}  # group axes -> when its stream is free
waits = collectives = retired = 0
in_flight = []  # (reads, writes, end), oldest first


def wait_until(end):
    global now, exposed, waits
    if end > now:
        exposed += end - now
        now = end
        waits += 1


for k, slot in program.step_kernels():
    kernel = kernels[k]
    reads = [span(v, slot) for v in kernel.ins]
    writes = [span(v, slot) for v in kernel.outs]
    if kernel.name in COLLECTIVES:
        if len(in_flight) == EVENT_SLOTS:
            wait_until(in_flight.pop(0)[2])
            retired += 1
        seconds = run_seconds.get(k, collective_seconds(kernel))
        charge(k, seconds)
        group = group_axes(kernel)
        end = max(now, stream_free.get(group, 0.0)) + seconds
        stream_free[group] = end
        stream_busy += seconds
        in_flight.append((reads, writes, end))
        collectives += 1
        continue
    hit = [e for e in in_flight
           if meets(e[1], reads) or meets(e[1], writes) or meets(e[0], writes)]
    for e in hit:
        in_flight.remove(e)
    if hit:
        wait_until(max(e[2] for e in hit))
    now += cost[k]
    charge(k, cost[k])
for free in stream_free.values():
    wait_until(free)

stage = report["stages"][0]
tolerance = 1e-9 * now
assert abs(report["step_time_s"] - now) <= tolerance, (report["step_time_s"],
                                                      now)
assert abs(stage["communication_s"] - exposed) <= tolerance, (
    stage["communication_s"], exposed)
overlapped = stream_busy - exposed
assert abs(stage["overlapped_communication_s"] - overlapped) <= tolerance, (
    stage["overlapped_communication_s"], overlapped)
# Each kind of kernel's own seconds (kernel_s).
assert set(stage["kernel_s"]) == set(kind_seconds), (
    sorted(stage["kernel_s"]), sorted(kind_seconds))
for name, seconds in kind_seconds.items():
    assert abs(stage["kernel_s"][name] - seconds) <= tolerance, (
        name, stage["kernel_s"][name], seconds)
print("ok: %d collectives run on %d streams, %d waits, %d for a slot; "
      "overlapped %s, exposed %s" % (collectives, len(stream_free), waits,
                                     retired, "some" if overlapped > tolerance else "none",
    "some" if exposed > tolerance else "none"))
