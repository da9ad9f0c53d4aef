"""Writes argv[2]: the hardware file argv[1] with every matmul and attention
at peak and memory traffic and kernel launches free (check-ideal-prediction.py);
with argv[3], its runtime_device that (attention-backward.test); with argv[4]
("F,B,FD,BD"; "-" for none), the CUDA device's own attention kernels at those
fractions (forward, backward, each with an attention dropout); with argv[5]
("F,B,FD,BD"), the attention kernels' seconds per score beside their
products (efficiency.attention_score_s), with argv[6] its block_rows ("-"
for none) and with argv[7] ("F,B") its seconds per query row."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from idealhardware import flat_efficiencies  # noqa: E402

h = json.load(open(sys.argv[1]))
h["name"] = "ideal"
flat_efficiencies(h, 0.0)
h["memory_bandwidth"] = {"bytes_per_s": 1e30, "source": "test"}
if len(sys.argv) > 3:
    h["runtime_device"] = sys.argv[3]
if len(sys.argv) > 4 and sys.argv[4] != "-":
    f, b, fd, bd = (float(x) for x in sys.argv[4].split(","))
    h["efficiency"]["attention_own_kernels"] = {
        "forward": f, "backward": b, "forward_dropout": fd,
        "backward_dropout": bd, "source": "test"}
if len(sys.argv) > 5:
    f, b, fd, bd = (float(x) for x in sys.argv[5].split(","))
    h["efficiency"]["attention_score_s"] = {
        "forward": f, "backward": b, "forward_dropout": fd,
        "backward_dropout": bd, "source": "test"}
if len(sys.argv) > 6 and sys.argv[6] != "-":
    h["efficiency"]["attention_score_s"]["block_rows"] = int(sys.argv[6])
if len(sys.argv) > 7:
    f, b = (float(x) for x in sys.argv[7].split(","))
    h["efficiency"]["attention_score_s"]["row_forward"] = f
    h["efficiency"]["attention_score_s"]["row_backward"] = b
json.dump(h, open(sys.argv[2], "w"), indent=1)
