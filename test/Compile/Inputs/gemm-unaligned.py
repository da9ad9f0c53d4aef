"""gemm-unaligned.test's pieces.

  gemm-unaligned.py cap IN OUT VALUE [KIND=VALUE ...]
      Writes OUT: the hardware file IN (make-ideal-hardware.py's ideal)
      with its efficiency.gemm_unaligned at VALUE (and each KIND's).
  gemm-unaligned.py deltas REPORT BASE CONFIG BATCH SEQ HARDWARE
      Prints, for each kind whose predicted seconds in REPORT differ from
      BASE's, the difference in units of the LM head's GEMM at HARDWARE's
      bf16 peak (2 * tokens * hidden * vocab FLOPs, from the model's
      config), then how many kinds are the same.
  gemm-unaligned.py plan REPORT BASE
      tpc-plan's check compiles (--report) of one plan on a description
      and on the same without gemm_unaligned: the compiled step's ratio,
      and each one's closed-form step over its compiled step.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from reportkinds import print_differing  # noqa: E402

if sys.argv[1] == "cap":
    h = json.load(open(sys.argv[2]))
    unaligned = {"value": float(sys.argv[4]), "source": "test"}
    kinds = dict(spec.split("=") for spec in sys.argv[5:])
    if kinds:
        unaligned["kinds"] = {k: float(v) for k, v in kinds.items()}
    h["efficiency"]["gemm_unaligned"] = unaligned
    json.dump(h, open(sys.argv[3], "w"), indent=1)
    sys.exit(0)

if sys.argv[1] == "plan":
    checks = [json.load(open(p))["check"] for p in sys.argv[2:4]]
    print("compiled step ratio %.2f" % (checks[0]["compiled_step_time_s"] /
                                        checks[1]["compiled_step_time_s"]))
    for name, check in zip(("capped", "base"), checks):
        print("%s closed form / compiled %.2f" % (
            name, check["closed_form_step_time_s"] /
            check["compiled_step_time_s"]))
    sys.exit(0)

assert sys.argv[1] == "deltas"
config = json.load(open(sys.argv[4]))
tokens = int(sys.argv[5]) * int(sys.argv[6])
head = 2.0 * tokens * config["n_embd"] * config["vocab_size"]
peak = json.load(open(sys.argv[7]))["peak_flops"]["bf16"]
print_differing(sys.argv[2], sys.argv[3], lambda a, b: (a - b) / (head / peak))
