"""Writes argv[2] (runtime_device argv[3]): the hardware file argv[1] with
matmuls, attention and kernel launches free and memory traffic at
argv[4] bytes/s: every kernel costs its bytes / that
(check-device-fusions.py). With argv[5], both links move argv[5] bytes/s
at every size with no latency: a collective over n ranks costs
factor(n) * bytes / argv[5] (check-collective-stream.py)."""
import json
import sys

h = json.load(open(sys.argv[1]))
h["name"] = "memory-bound"
h["runtime_device"] = sys.argv[3]
h["peak_flops"] = {"bf16": 1e30, "fp16": 1e30, "fp32": 1e30, "source": "test"}
e = h["efficiency"]
e["gemm"] = {"points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}
e["attention"] = {"value": 1.0, "source": "test"}
e["elementwise_bandwidth"] = {"value": 1.0, "source": "test"}
e["kernel_launch_s"] = {"value": 0.0, "source": "test"}
h["memory_bandwidth"] = {"bytes_per_s": float(sys.argv[4]), "source": "test"}
if len(sys.argv) > 5:
    for link in ("intra_node", "inter_node"):
        h[link]["bytes_per_s"] = float(sys.argv[5])
        h[link]["latency_s"] = 0.0
        e["collective_bus_bandwidth"][link] = {
            "points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}
json.dump(h, open(sys.argv[2], "w"), indent=1)
