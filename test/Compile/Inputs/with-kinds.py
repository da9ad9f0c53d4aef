"""Writes argv[2]: the hardware file argv[1] with its kernel launches free,
argv[3] as its runtime_device, and (argv[4:], each KIND=FACTOR) those
kinds' efficiency.elementwise_bandwidth.kinds: the description's value
times FACTOR (a literal VALUE with KIND==VALUE)."""
import json
import sys

h = json.load(open(sys.argv[1]))
h["efficiency"]["kernel_launch_s"]["value"] = 0
h["runtime_device"] = sys.argv[3]
elementwise = h["efficiency"]["elementwise_bandwidth"]
kinds = {}
for spec in sys.argv[4:]:
    if "==" in spec:
        kind, value = spec.split("==")
        kinds[kind] = json.loads(value)
    else:
        kind, factor = spec.rsplit("=", 1)
        kinds[kind] = elementwise["value"] * float(factor)
if kinds:
    elementwise["kinds"] = kinds
json.dump(h, open(sys.argv[2], "w"), indent=1)
