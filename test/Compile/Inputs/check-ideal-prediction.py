"""On an ideal GPU (every matmul and attention at peak, free memory traffic
and launches: make-ideal-hardware.py), each stage's predicted compute time is
the FLOPs its kernels compute over the peak, so it must equal the report's
FLOPs less those over the scores causal attentions mask (both counted from
the tpc IR, independently of the kernels the simulation times) over the
peak: a kernel whose FLOPs the simulation misreads (a layout it takes for
another, a mask it misses) breaks the equality. Prints how many FLOPs the
masks took off, so that a check on a causal model shows it did."""
import json
import sys

r = json.load(open(sys.argv[1]))
hw = json.load(open(sys.argv[2]))
peak = hw["peak_flops"][sys.argv[3]]
masked = 0.0
for s, plan in zip(r["predicted"]["stages"], r["stages"]):
    computed = plan["flops_per_microbatch"] - plan["masked_flops_per_microbatch"]
    masked += plan["masked_flops_per_microbatch"] / plan["flops_per_microbatch"]
    expected = computed * r["microbatches"] / peak
    assert expected > 0
    assert abs(s["compute_s"] - expected) <= 1e-9 * expected, (s, expected)
print(f"ok: {len(r['stages'])} stage(s), compute = (FLOPs - masked) / peak, "
      f"masked {'> 0' if masked > 0 else '0'}")
