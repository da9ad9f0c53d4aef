"""Checks tpc-compile --remat auto's choice against every candidate of its
search space, each compiled on its own (one device or each pipeline stage):
per stage, `a` full layers then `b` selective ones then none (a + b <= L),
and checkpointed groups of N layers (uniform). Auto must pick, per stage, a
candidate whose planned peak fits the limit with the least recompute FLOPs
any fitting candidate has.

  remat-auto-check.py BIN MODEL LIMIT AUTO_REPORT AUTO_STDERR [FLAGS...]

BIN is the tools' directory; FLAGS are the compile's (--train, --mesh, ...,
without --remat). AUTO_STDERR is auto's progress: the planned peak it
predicted for each stage's choice must be the report's (the executable's).
Prints one `ok` line per stage, or FAIL and exits 1."""

import json
import os
import subprocess
import sys
import tempfile


def compile_report(bin_dir, model, flags, remat, work):
    report = os.path.join(work, "r.json")
    subprocess.run([os.path.join(bin_dir, "tpc-compile"), model, "-o",
                    os.path.join(work, "x.tpcx"), "--report", report,
                    "--remat", remat] + flags,
                   check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return json.load(open(report))


def main(argv):
    bin_dir, model, limit, auto_path = argv[1], argv[2], int(argv[3]), argv[4]
    progress, flags = open(argv[5]).read(), argv[6:]
    auto = json.load(open(auto_path))
    layers = auto["model"]["layers"]
    stages = auto["stages"]
    work = tempfile.mkdtemp()
    # Each stage's layers, in order (one range per chunk).
    per_stage = []
    for stage in stages:
        ranges = stage.get("chunk_layers") or [stage["layers"]]
        per_stage.append([[l for l in range(first, last + 1)]
                          for first, last in ranges])
    def policy(choose):
        entries = ["n"] * layers
        for stage, chunks in enumerate(per_stage):
            for layer, entry in choose(stage, chunks).items():
                entries[layer] = entry
        return "layers:" + ",".join(entries)
    most = max(len(sum(chunks, [])) for chunks in per_stage)
    candidates = []
    for a in range(most + 1):
        for b in range(most + 1 - a):
            def counts(stage, chunks, a=a, b=b):
                flat = sum(chunks, [])
                return {layer: "f" if i < a else "s" if i < a + b else "n"
                        for i, layer in enumerate(flat)}
            candidates.append(("full %d selective %d" % (a, b), counts))
    for n in range(2, max(len(c) for chunks in per_stage for c in chunks) + 1):
        def groups(stage, chunks, n=n):
            return {layer: "g%d" % chunk[i // n * n]
                    for chunk in chunks for i, layer in enumerate(chunk)}
        candidates.append(("uniform:%d" % n, groups))
    # Per stage: the least FLOPs of a fitting candidate (a stage with fewer
    # layers sees some candidates twice: the same result).
    best = [None] * len(stages)
    for name, choose in candidates:
        report = compile_report(bin_dir, model, flags, policy(choose), work)
        for i, stage in enumerate(report["stages"]):
            if stage["peak_bytes"] <= limit:
                flops = stage["recompute_flops_per_microbatch"]
                if best[i] is None or flops < best[i][0]:
                    best[i] = (flops, name)
    for i, stage in enumerate(stages):
        if best[i] is None:
            print("FAIL: stage %d: no candidate fits, but auto chose %s" %
                  (i, stage["remat"]))
            sys.exit(1)
        got = stage["recompute_flops_per_microbatch"]
        if stage["peak_bytes"] > limit or got != best[i][0]:
            print("FAIL: stage %d: auto chose %s (peak %d, %d FLOPs); the "
                  "least fitting is %s (%d FLOPs)" %
                  (i, stage["remat"], stage["peak_bytes"], got, best[i][1],
                   best[i][0]))
            sys.exit(1)
        choice = stage["remat"][len("auto: "):]
        predicted = [int(line.split("planned peak ")[1].split(" ")[0])
                     for line in progress.splitlines()
                     if ": stage %d: %s: planned peak " % (i, choice) in line]
        if predicted != [stage["peak_bytes"]]:
            print("FAIL: stage %d: auto predicted %s for %s, the plan has %d" %
                  (i, predicted, choice, stage["peak_bytes"]))
            sys.exit(1)
        print("ok stage %d: %s, %d recompute FLOPs, the least that fits "
              "(%d candidates compiled); predicted peak %d = planned" %
              (i, stage["remat"], got, len(candidates), predicted[0]))


if __name__ == "__main__":
    main(sys.argv)
