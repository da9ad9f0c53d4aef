"""Two compile reports' predicted seconds per kind of kernel, compared
(kind-ratios.py, gemm-unaligned.py)."""
import json


def kinds(path):
    return json.load(open(path))["predicted"]["stages"][0]["kernel_s"]


def print_differing(first_path, second_path, show):
    """Prints, for each kind of the first report whose seconds differ from
    the second's by more than 1e-9 relative, the kind and show(first's,
    second's) (3 decimals), then how many kinds are the same."""
    first, second = kinds(first_path), kinds(second_path)
    assert sorted(first) == sorted(second), (sorted(first), sorted(second))
    same = 0
    for kind in sorted(first):
        a, b = first[kind], second[kind]
        if abs(a - b) <= 1e-9 * max(abs(a), abs(b)):
            same += 1
        else:
            print("%s %.3f" % (kind, show(a, b)))
    print("same %d of %d" % (same, len(first)))
