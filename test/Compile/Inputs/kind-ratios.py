"""Prints, for each kind of the first report whose predicted seconds differ
from the second's by more than 1e-9 relative, the first's over the second's
(3 decimals), then how many kinds are the same: a description's
elementwise_bandwidth.kinds against the same description without them."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reportkinds import print_differing  # noqa: E402

print_differing(sys.argv[1], sys.argv[2], lambda a, b: a / b)
