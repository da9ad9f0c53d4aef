"""Prints, for each kind of the first report whose predicted seconds differ
from the second's by more than 1e-9 relative, the first's over the second's
(3 decimals), then how many kinds are the same: a description's
elementwise_bandwidth.kinds against the same description without them."""
import json
import sys

def kinds(path):
    return json.load(open(path))["predicted"]["stages"][0]["kernel_s"]

first, second = kinds(sys.argv[1]), kinds(sys.argv[2])
assert sorted(first) == sorted(second), (sorted(first), sorted(second))
same = 0
for kind in sorted(first):
    a, b = first[kind], second[kind]
    if abs(a - b) <= 1e-9 * max(abs(a), abs(b)):
        same += 1
    else:
        print("%s %.3f" % (kind, a / b))
print("same %d of %d" % (same, len(first)))
