"""Prints, for each attention kernel kind, the seconds of the first report
(a description with efficiency.attention_score_s) less the second's (the
same without), in units of argv[3] seconds: the scores its kernels price
over the step times the per-score factor the description gives them."""
import json
import sys

with_score = json.load(open(sys.argv[1]))["predicted"]["stages"][0]["kernel_s"]
without = json.load(open(sys.argv[2]))["predicted"]["stages"][0]["kernel_s"]
unit = float(sys.argv[3])
for kind in sorted(with_score):
    if kind.startswith("attention"):
        print("%s %d" % (kind, round((with_score[kind] - without[kind]) / unit)))
