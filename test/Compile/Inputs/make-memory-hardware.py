"""Writes argv[2] (runtime_device argv[3]): the hardware file argv[1] with
matmuls, attention and kernel launches free and memory traffic at
argv[4] bytes/s: every kernel costs its bytes / that
(check-device-fusions.py). With argv[5], both links move argv[5] bytes/s
at every size with no latency: a collective over n ranks costs
factor(n) * bytes / argv[5] (check-collective-stream.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from idealhardware import flat_efficiencies, set_links  # noqa: E402

h = json.load(open(sys.argv[1]))
h["name"] = "memory-bound"
h["runtime_device"] = sys.argv[3]
h["peak_flops"] = {"bf16": 1e30, "fp16": 1e30, "fp32": 1e30, "source": "test"}
flat_efficiencies(h, 0.0)
h["memory_bandwidth"] = {"bytes_per_s": float(sys.argv[4]), "source": "test"}
if len(sys.argv) > 5:
    set_links(h, float(sys.argv[5]), 0.0)
json.dump(h, open(sys.argv[2], "w"), indent=1)
