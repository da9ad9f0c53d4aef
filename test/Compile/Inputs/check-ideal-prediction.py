"""On an ideal GPU (every matmul and attention at peak, free memory traffic
and launches: make-ideal-hardware.py), each stage's predicted compute time is
its matmul and attention FLOPs over the peak, so it must equal the report's
FLOPs (counted from the tpc IR, independently of the kernels the simulation
times) over the peak: a kernel whose FLOPs the simulation misreads (a layout
it takes for another) breaks the equality."""
import json
import sys

r = json.load(open(sys.argv[1]))
hw = json.load(open(sys.argv[2]))
peak = hw["peak_flops"][sys.argv[3]]
for s, plan in zip(r["predicted"]["stages"], r["stages"]):
    expected = plan["flops_per_microbatch"] * r["microbatches"] / peak
    assert expected > 0
    assert abs(s["compute_s"] - expected) <= 1e-9 * expected, (s, expected)
print(f"ok: {len(r['stages'])} stage(s), compute = FLOPs / peak")
