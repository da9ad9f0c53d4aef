"""Writes argv[2]: the hardware file argv[1] with every matmul and attention
at peak and memory traffic and kernel launches free (check-ideal-prediction.py);
with argv[3], its runtime_device that (attention-backward.test)."""
import json
import sys

h = json.load(open(sys.argv[1]))
h["name"] = "ideal"
e = h["efficiency"]
e["gemm"] = {"points": [[1.0, 1.0], [1e18, 1.0]], "source": "test"}
e["attention"] = {"value": 1.0, "source": "test"}
e["elementwise_bandwidth"] = {"value": 1.0, "source": "test"}
e["kernel_launch_s"] = {"value": 0.0, "source": "test"}
h["memory_bandwidth"] = {"bytes_per_s": 1e30, "source": "test"}
if len(sys.argv) > 3:
    h["runtime_device"] = sys.argv[3]
json.dump(h, open(sys.argv[2], "w"), indent=1)
