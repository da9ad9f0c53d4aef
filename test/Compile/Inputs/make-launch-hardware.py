"""Writes argv[2] (runtime_device argv[3]): the hardware file argv[1] with
everything free but kernel launches, each argv[4] seconds: a kernel kind's
seconds in the replay are its launches times that
(optimizer-launches.test). With argv[5], the links' latency is that and
their bandwidth without limit: a collective kind's seconds are its
collectives times that (reduction-runs.test)."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from idealhardware import flat_efficiencies, set_links  # noqa: E402

h = json.load(open(sys.argv[1]))
h["name"] = "launch-bound"
h["runtime_device"] = sys.argv[3]
h["peak_flops"] = {"bf16": 1e30, "fp16": 1e30, "fp32": 1e30, "source": "test"}
h["memory_bandwidth"] = {"bytes_per_s": 1e30, "source": "test"}
flat_efficiencies(h, float(sys.argv[4]))
if len(sys.argv) > 5:
    set_links(h, 1e30, float(sys.argv[5]))
json.dump(h, open(sys.argv[2], "w"), indent=1)
