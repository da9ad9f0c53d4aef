"""Writes argv[2] (runtime_device argv[3]): the hardware file argv[1] with
everything free but kernel launches, each argv[4] seconds: a kernel kind's
seconds in the replay are its launches times that
(optimizer-launches.test). With argv[5], the links' latency is that and
their bandwidth without limit: a collective kind's seconds are its
collectives times that (reduction-runs.test)."""
import json
import sys

h = json.load(open(sys.argv[1]))
h["name"] = "launch-bound"
h["runtime_device"] = sys.argv[3]
h["peak_flops"] = {"bf16": 1e30, "fp16": 1e30, "fp32": 1e30, "source": "test"}
h["memory_bandwidth"] = {"bytes_per_s": 1e30, "source": "test"}
e = h["efficiency"]
e["gemm"] = {"points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}
e["attention"] = {"value": 1.0, "source": "test"}
e["elementwise_bandwidth"] = {"value": 1.0, "source": "test"}
e["kernel_launch_s"] = {"value": float(sys.argv[4]), "source": "test"}
if len(sys.argv) > 5:
    for link in ("intra_node", "inter_node"):
        h[link]["latency_s"] = float(sys.argv[5])
        h[link]["bytes_per_s"] = 1e30
        e["collective_bus_bandwidth"][link] = {
            "points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}
json.dump(h, open(sys.argv[2], "w"), indent=1)
