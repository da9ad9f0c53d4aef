"""Checks tpc-compile --remat auto's choices against candidates compiled one
by one (one device, or each pipeline stage: a stage's peak depends on its
own layers only). Per stage, auto must pick a candidate whose planned peak
fits the limit with the least recompute FLOPs of any candidate that does,
and the peak auto predicted for it (its progress on stderr) must be the
executable's (the report's).

  remat-auto-check.py BIN MODEL [--every-assignment]
                      --check LIMIT REPORT STDERR [--check ...] -- FLAGS...

BIN is the tools' directory; FLAGS are the compiles' (--train, --mesh, ...,
without --remat). The candidates: auto's search space (per stage `a` full
layers, then `b` selective, the rest none; checkpointed groups of N layers
of a chunk), or with --every-assignment every choice of none, selective or
full for every layer (3^layers compiles) and the groups: auto's choice must
then also be the least over choices it does not search (another order of
the layers). Prints one `ok` line per check and stage, or FAIL and exits 1.
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main(argv):
    if "--" not in argv:
        fail("no -- before the compile's flags")
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("model")
    parser.add_argument("--every-assignment", action="store_true")
    parser.add_argument("--check", nargs=3, action="append", required=True,
                        metavar=("LIMIT", "REPORT", "STDERR"))
    args = parser.parse_args(argv[1:split])
    flags = argv[split + 1:]
    work = tempfile.mkdtemp()

    # The stages' layers, in order, by chunk (from the first auto report).
    first = json.load(open(args.check[0][1]))
    layers = first["model"]["layers"]
    per_stage = []
    for stage in first["stages"]:
        ranges = stage.get("chunk_layers") or [stage["layers"]]
        per_stage.append([list(range(a, b + 1)) for a, b in ranges])

    # Candidates as tpc-remat policies over every layer.
    policies = {}
    def policy(entries):
        return "layers:" + ",".join(entries[l] for l in range(layers))
    if args.every_assignment:
        for choice in itertools.product("nsf", repeat=layers):
            policies["".join(choice)] = policy(dict(enumerate(choice)))
    else:
        most = max(len(sum(chunks, [])) for chunks in per_stage)
        for a in range(most + 1):
            for b in range(most + 1 - a):
                entries = {}
                for chunks in per_stage:
                    for i, layer in enumerate(sum(chunks, [])):
                        entries[layer] = "f" if i < a else \
                            "s" if i < a + b else "n"
                policies["full %d selective %d" % (a, b)] = policy(entries)
    longest = max(len(c) for chunks in per_stage for c in chunks)
    for n in range(2, longest + 1):
        entries = {layer: "g%d" % chunk[i // n * n]
                   for chunks in per_stage for chunk in chunks
                   for i, layer in enumerate(chunk)}
        policies["uniform:%d" % n] = policy(entries)

    # Each candidate's peak and recompute FLOPs per stage.
    measured = []
    report = os.path.join(work, "r.json")
    for name, remat in policies.items():
        subprocess.run([os.path.join(args.bin, "tpc-compile"), args.model,
                        "-o", os.path.join(work, "x.tpcx"), "--report",
                        report, "--remat", remat] + flags,
                       check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        stages = json.load(open(report))["stages"]
        measured.append((name, [(s["peak_bytes"],
                                 s["recompute_flops_per_microbatch"])
                                for s in stages]))

    for limit, auto_path, progress_path in args.check:
        limit = int(limit)
        auto = json.load(open(auto_path))
        progress = open(progress_path).read()
        for i, stage in enumerate(auto["stages"]):
            fits = [(flops, name) for name, stages in measured
                    for peak, flops in [stages[i]] if peak <= limit]
            if not fits:
                fail("limit %d, stage %d: no candidate fits, auto chose %s" %
                     (limit, i, stage["remat"]))
            least, which = min(fits)
            got = stage["recompute_flops_per_microbatch"]
            if stage["peak_bytes"] > limit or got != least:
                fail("limit %d, stage %d: auto chose %s (peak %d, %d FLOPs); "
                     "%s fits with %d FLOPs" % (limit, i, stage["remat"],
                                                stage["peak_bytes"], got,
                                                which, least))
            choice = stage["remat"][len("auto: "):]
            predicted = [int(line.split("planned peak ")[1].split(" ")[0])
                         for line in progress.splitlines()
                         if ": stage %d: %s: planned peak " % (i, choice)
                         in line]
            if predicted != [stage["peak_bytes"]]:
                fail("limit %d, stage %d: auto predicted %s for %s, the plan "
                     "has %d" % (limit, i, predicted, choice,
                                 stage["peak_bytes"]))
            print("ok limit %d stage %d: %s, %d recompute FLOPs, the least "
                  "that fits (%d candidates compiled); predicted peak %d = "
                  "planned" % (limit, i, stage["remat"], got, len(measured),
                               predicted[0]))


if __name__ == "__main__":
    main(sys.argv)
