"""The asynchronous stage lists start each channel's transfers in the order
the synchronous ones run them, and start sends early.

argv: two dist-pipeline-stages outputs of one step, with async-transfers
true and false, the pipeline ranks and the chunks' placement (rr: chunk c
on rank c mod p; v: chunk c on rank c, or 2p - 1 - c past p). Per rank and
channel (the sends to one peer, the receives from one peer), the transfers
(function names "send act chunk C", "recv grad chunk C", ..., with their
microbatch) of the synchronous list, in order, must be the asynchronous
list's starts in the same order: they pair first in, first out as in the
checked list. Also counts, per rank, the sends that start before a compute
or a wait that the synchronous list has before them (moved up).
"""
import re
import sys


def stage_actions(path):
    text = open(path).read()
    m = re.search(r"dist\.stage_actions = \[(.*?)\]\}\]", text, re.S)
    assert m, f"{path}: no dist.stage_actions"
    ranks = []
    for entry in re.finditer(
            r"\{actions = array<i64: ([0-9, ]*)>, functions = \[([^\]]*)\]",
            m.group(0)):
        numbers = [int(x) for x in entry.group(1).split(",")]
        names = re.findall(r'"([^"]*)"', entry.group(2))
        ranks.append([(names[f], mb) for f, mb in
                      zip(numbers[0::2], numbers[1::2])])
    return ranks


def is_transfer(name):
    return re.match(r"(send|recv) (act|grad) chunk \d+$", name) is not None


asynchronous = stage_actions(sys.argv[1])
synchronous = stage_actions(sys.argv[2])
ranks = int(sys.argv[3])
placement = sys.argv[4]


def rank_of(chunk):
    if placement == "v":
        return chunk if chunk < ranks else 2 * ranks - 1 - chunk
    return chunk % ranks


def channel(name):
    verb, kind, _, chunk = name.split()
    chunk = int(chunk)
    step = 1 if kind == "act" else -1
    return verb, rank_of(chunk + step if verb == "send" else chunk - step)

assert len(asynchronous) == len(synchronous)
moved = []
for rank, (a, s) in enumerate(zip(asynchronous, synchronous)):
    channels = {channel(x[0]) for x in s if is_transfer(x[0])}
    for which in channels:
        starts = [x for x in a
                  if is_transfer(x[0]) and channel(x[0]) == which]
        transfers = [x for x in s
                     if is_transfer(x[0]) and channel(x[0]) == which]
        assert starts == transfers, (rank, which, starts, transfers)
    # A send moved up: something that precedes it in the synchronous list
    # (a compute or another transfer's wait) comes after its start here.
    count = 0
    for i, (name, mb) in enumerate(a):
        if not name.startswith("send "):
            continue
        position = s.index((name, mb))
        before = set(s[:position])
        count += any(x in before and not is_transfer(x[0])
                     for x in a[i + 1:])
    moved.append(count)
print(f"ok: {len(asynchronous)} ranks start each channel's transfers in the "
      f"synchronous order; sends started earlier per rank: {moved}")
