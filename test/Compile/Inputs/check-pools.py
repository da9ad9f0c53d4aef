"""Checks the pools of a pipeline's report (tpc-compile --report) against
the schedule's formulas (docs/design/pipeline-schedules.md, "Memory in
flight"): one pool per kind of value, each with a slot per microbatch it
holds at once.

  check-pools.py REPORT SCHEDULE P M [--in-flight A,B,...] [--blocking REPORT]

SCHEDULE is 1f1b, gpipe or zb-h1 (their formulas below), or `any` (the
checks that hold for every schedule alone).

Every pool holds one chunk's values (or what a chunk hands to the next on
its rank). Per stage i (0-based) of a schedule that runs B and W together (1f1b,
gpipe), F's stash for B ({F, BW}) holds min(m, p - i) microbatches under
1F1B and m under GPipe. Under zb-h1 F's stash for B alone ({F, B}) holds
min(m, p - i); B's gradients for W ({B, W}) min(m, i + 1); what W reads of
F's ({F, W}, {F, B, W}) the microbatches between F and W, --in-flight
(the schedule checker's peak-in-flight, dist-print-schedule). With
--blocking (the same compile with --blocking-transfers): the asynchronous
pools equal the blocking ones where no transfer touches them and take at
most one slot more where one does (a transfer in flight while the next
microbatch's is made). Prints one `ok` line per stage."""

import json
import re
import sys


def compute_kind(functions):
    """The compute functions of a pool (its transfers dropped): a set of
    'F', 'B', 'BW', 'W'."""
    kinds = set()
    for name in functions:
        first = name.split(" ")[0]
        if first in ("F", "B", "BW", "W"):
            kinds.add(first)
    return frozenset(kinds)


def has_transfer(functions):
    return any(name.split(" ")[0] in ("send", "recv", "wait")
               for name in functions)


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main(argv):
    report, schedule, p, m = argv[1], argv[2], int(argv[3]), int(argv[4])
    in_flight, blocking = None, None
    rest = argv[5:]
    while rest:
        if rest[0] == "--in-flight":
            in_flight = [int(x) for x in rest[1].split(",")]
        elif rest[0] == "--blocking":
            blocking = json.load(open(rest[1]))
        else:
            fail("unknown argument " + rest[0])
        rest = rest[2:]
    stages = json.load(open(report))["stages"]
    if len(stages) != p:
        fail("%d stages, expected %d" % (len(stages), p))
    for i, stage in enumerate(stages):
        pools = stage.get("pools", [])
        by_kind = {}
        for pool in pools:
            if pool["slots"] < 1 or pool["slot_bytes"] <= 0:
                fail("stage %d: pool %s" % (i, pool))
            # A pool per kind: one chunk's values (interleaved stages keep
            # each chunk's apart), or a chunk's output handed to the next
            # chunk on the same rank (ZB-V's middle rank).
            # (The last microbatch's copy of a function that also reduces
            # the gradients is "BW chunk 1 + reductions".)
            chunks = sorted({int(re.search(r"chunk (\d+)", name).group(1))
                             for name in pool["functions"]})
            if len(chunks) > 2 or chunks[-1] - chunks[0] > 1:
                fail("stage %d: pool %s mixes chunks" % (i, pool["functions"]))
            kind = compute_kind(pool["functions"])
            by_kind.setdefault(kind, []).append(pool)
        expected = {}
        if schedule == "1f1b":
            expected[frozenset({"F", "BW"})] = min(m, p - i)
        elif schedule == "gpipe":
            expected[frozenset({"F", "BW"})] = m
        elif schedule == "zb-h1":
            expected[frozenset({"F", "B"})] = min(m, p - i)
            expected[frozenset({"B", "W"})] = min(m, i + 1)
            expected[frozenset({"F", "W"})] = in_flight[i]
            expected[frozenset({"F", "B", "W"})] = in_flight[i]
        elif schedule != "any":
            fail("no formula for " + schedule)
        for kind, slots in expected.items():
            # The compute pool itself (transfer pools of the same compute
            # kind hold the boundary tensors).
            own = [pool for pool in by_kind.get(kind, [])
                   if not has_transfer(pool["functions"])]
            if len(own) != 1:
                fail("stage %d: %d pools of kind %s in %s" %
                     (i, len(own), sorted(kind), pools))
            if own[0]["slots"] != slots:
                fail("stage %d: pool %s has %d slots, expected %d" %
                     (i, own[0]["functions"], own[0]["slots"], slots))
        pooled = sum(pool["slots"] * pool["slot_bytes"] for pool in pools)
        line = "ok stage %d: %d pools, %s; %d bytes" % (
            i, len(pools),
            ", ".join("%s %d" % ("+".join(sorted(k)), s)
                      for k, s in sorted(expected.items(),
                                         key=lambda e: sorted(e[0]))),
            pooled)
        if blocking is not None:
            theirs = blocking["stages"][i].get("pools", [])
            def key(pool):
                return (compute_kind(pool["functions"]),
                        has_transfer(pool["functions"]),
                        pool["slot_bytes"],
                        tuple(sorted(n for n in pool["functions"]
                                     if not n.startswith("wait "))))
            blocking_slots = {key(pool): pool["slots"] for pool in theirs}
            grown = 0
            for pool in pools:
                k = key(pool)
                if k not in blocking_slots:
                    fail("stage %d: pool %s has no blocking twin" %
                         (i, pool["functions"]))
                extra = pool["slots"] - blocking_slots[k]
                allowed = 1 if has_transfer(pool["functions"]) else 0
                if extra < 0 or extra > allowed:
                    fail("stage %d: pool %s: %d slots, blocking %d" %
                         (i, pool["functions"], pool["slots"],
                          blocking_slots[k]))
                grown += extra
            line += "; %d transfer pools one slot more than blocking" % grown
        print(line)


if __name__ == "__main__":
    main(sys.argv)
