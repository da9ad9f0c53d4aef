"""Prints, for each attention kernel kind of the first report (cuda), its
seconds over the second's (cpu), from their stages' kernel_s."""
import json
import sys

cuda = json.load(open(sys.argv[1]))["predicted"]["stages"][0]["kernel_s"]
cpu = json.load(open(sys.argv[2]))["predicted"]["stages"][0]["kernel_s"]
for kind in sorted(cuda):
    if kind.startswith("attention") and kind in cpu and cpu[kind] > 0:
        print("%s %.4f" % (kind, cuda[kind] / cpu[kind]))
