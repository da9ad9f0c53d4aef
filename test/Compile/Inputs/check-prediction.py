"""The report's predicted section is whole and consistent: per stage, busy
plus idle time is the step; its peaks are the plan's; MFU <= HFU <= 1."""
import json
import sys

r = json.load(open(sys.argv[1]))
p = r["predicted"]
step = p["step_time_s"]
assert step > 0
assert 0 <= p["bubble_fraction"] < 1, p["bubble_fraction"]
assert 0 < p["mfu"] <= p["hfu"] <= 1, (p["mfu"], p["hfu"])
assert len(p["stages"]) == len(r["stages"])
for s, plan in zip(p["stages"], r["stages"]):
    busy = s["compute_s"] + s["recompute_s"] + s["communication_s"]
    assert abs(busy + s["idle_s"] - step) <= 1e-9 * step or (s["idle_s"] == 0 and busy <= step * (1 + 1e-9)), (busy, s, step)
    assert s["peak_bytes"] == plan["peak_bytes"]
    assert (s["recompute_s"] > 0) == (plan["recompute_flops_per_microbatch"] > 0)
print(f"ok {p['hardware']}: {len(p['stages'])} stages, step {step:.4g} s, "
      f"bubble {p['bubble_fraction']:.3f}, mfu {p['mfu']:.3f}")
