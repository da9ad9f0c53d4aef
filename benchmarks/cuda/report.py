#!/usr/bin/env python3
"""The CUDA benchmarks' arithmetic and summary (test/gpu/device-check.sh).

    report.py tpc-step --log TPC_RUN_OUTPUT --batch B --seq S --hidden H
                       --layers L --vocab V [--report REPORT.json]
        reads tpc-run's `step <k> ... tokens_per_s <r>` lines of a training
        run and prints one JSON line: the step time (batch * seq / r,
        averaged over the steps after the first, which warms up) and its MFU;
        rank 0's peak and planned peak and, from stderr where the log has
        it, the device's whole allocation (`device_bytes`) and the driver's
        count of its memory in use around the steps (`device_in_use_bytes`:
        before them, after the first, after the last); with --report,
        tpc-compile's prediction for the same executable (its "predicted"
        section: step time, MFU, peak bytes on --hardware).

    report.py trace-ops --trace TRACE.json [--step K] [--top N]
                        [--batch B --seq S --hidden H --layers L --vocab V]
                        [--report REPORT.json]
        tpc-run --trace's events of step K (default the last): time per
        opcode (calls, ms, share) and the N slowest kernels; one summary line
        first. The trace says how its kernels were timed: by events on the
        CUDA device's compute stream (a fused group's time lands on its last
        member, a batch's on the run that launched it) or each to its end
        (the device synchronized after it). With a GPT's dimensions, a
        second line: the TFLOP/s of its GEMMs (linear, linear_input_grad,
        linear_weight_grad: 2·B·S·(12·L·H² + H·V) FLOPs each, over the
        time of the kinds they head) and of its causal attention (forward
        2·B·L·S²·H, the causal half of FlashAttention's count; backward 2.5
        times that).
        With --report (tpc-compile --report --hardware's file for the same
        executable), the time is per kind as the report's replay names it:
        an opcode, a fused group's opcodes joined by '+' (its members'
        times summed; the groups and batches are the report's, by kernel
        index) or a batch's `x,y batch`; each row gains the replay's
        predicted ms and measured/predicted, and a line after the summary
        gives both totals and the ratios of the six largest kinds. The
        stage is the trace's rank's (ranks pp-major). Kinds one side lacks
        are listed.
        With --calibrate HW.json --write OUT.json (and --report; HW the
        description the report was compiled with): OUT is HW with its
        prices fitted to the trace, each to the value at which the replay
        gives the measured time (old × (predicted − launches) / (measured
        − launches)), by the report's kernel_prices: each memory-bound
        kind's own efficiency.elementwise_bandwidth.kinds entry, and the
        attention values (attention_own_kernels' or attention.value) that
        price the attention kinds; the GEMMs (a curve), collectives and
        launch-bound kinds are left as they were. Lines list the changes
        (old -> new, measured/predicted) and what was left.

    report.py merge --json OUT.json < JSON lines
        reads the JSON lines of tpc-cuda-bench, gemm_attention_torch.py,
        `report.py tpc-step` and gpt_step_torch.py, pairs tpc's and torch's
        by case, prints `tpc X TFLOP/s vs torch Y TFLOP/s (ratio)` per case
        with the issue's targets (GEMM >= 95% of torch.matmul on the same
        shapes in the same run; causal attention forward at seq 4096, head
        dim 128 >= 400 TFLOP/s) and the training step's MFU, and writes it
        all to OUT.json.

MFU (Narayanan et al. 2021, without recomputation): a step of a GPT with L
layers, hidden h, sequence s, vocabulary V, batch B does
72·B·L·s·h²·(1 + s/(6h) + V/(12·h·L)) FLOPs (its attention counted without
the causal half); MFU is that over the step time times the H100/H200 dense
bf16 peak, 989e12 FLOP/s.
"""

import argparse
import datetime
import json
import os
import re
import sys

PEAK_BF16 = 989e12
GEMM_TARGET_RATIO = 0.95
ATTENTION_TARGET_TFLOPS = 400.0


def cuda_torch():
    """torch with a CUDA device and TF32 off (the comparisons are fp32-exact
    and bf16), or None after saying why it is skipped."""
    try:
        import torch
    except ImportError:
        print("no torch: skipped")
        return None
    if not torch.cuda.is_available():
        print("no CUDA device for torch: skipped")
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def step_flops(batch, seq, hidden, layers, vocab):
    return (72.0 * batch * layers * seq * hidden ** 2
            * (1 + seq / (6.0 * hidden) + vocab / (12.0 * hidden * layers)))


def mfu(step_seconds, batch, seq, hidden, layers, vocab, peak=PEAK_BF16):
    return step_flops(batch, seq, hidden, layers, vocab) / (step_seconds * peak)


def tpc_step(args):
    rates, losses = [], []
    with open(args.log) as f:
        for line in f:
            words = line.split()
            if len(words) > 3 and words[0] == "step" and "tokens_per_s" in words:
                rates.append(float(words[words.index("tokens_per_s") + 1]))
                losses.append(float(words[words.index("loss") + 1]))
    if not rates:
        print(f"error: no step lines in {args.log}", file=sys.stderr)
        return 1
    timed = rates[1:] or rates
    tokens = args.batch * args.seq
    seconds = sum(tokens / r for r in timed) / len(timed)
    result = {
        "tool": "tpc", "kind": "gpt_step", "impl": "tpc-run --device cuda",
        "batch": args.batch, "seq": args.seq, "hidden": args.hidden,
        "layers": args.layers, "vocab": args.vocab,
        "steps_timed": len(timed),
        "timing": "batch*seq / tokens_per_s of the steps after the first",
        "step_ms": seconds * 1e3, "tokens_per_s": tokens / seconds,
        "mfu": mfu(seconds, args.batch, args.seq, args.hidden, args.layers,
                   args.vocab),
        "losses": losses}
    result.update(memory_lines(args.log))
    if args.report:
        with open(args.report) as f:
            predicted = json.load(f).get("predicted")
        if not predicted:
            print(f"error: {args.report} has no \"predicted\" section "
                  "(tpc-compile --report without --hardware)", file=sys.stderr)
            return 1
        result["predicted_hardware"] = predicted.get("hardware")
        result["predicted_step_ms"] = predicted["step_time_s"] * 1e3
        result["predicted_mfu"] = predicted.get("mfu")
        stages = predicted.get("stages") or []
        if stages:
            result["predicted_peak_bytes"] = stages[0].get("peak_bytes")
    print(json.dumps(result))
    return 0


def memory_lines(path):
    """Rank 0's `rank 0 peak_bytes P planned_peak_bytes Q` (stdout),
    `tpc-run: rank 0 device_bytes D ...` and `tpc-run: rank 0
    device_in_use_bytes before_steps A after_step_1 B after_step_K C`
    (stderr) lines, where present."""
    found = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[:3] == ["rank", "0", "peak_bytes"] and len(words) >= 6:
                found["peak_bytes"] = int(words[3])
                found["planned_peak_bytes"] = int(words[5])
            elif words[:4] == ["tpc-run:", "rank", "0", "device_bytes"]:
                found["device_bytes"] = int(words[4])
            elif (words[:4] == ["tpc-run:", "rank", "0", "device_in_use_bytes"]
                  and len(words) == 10 and words[8].startswith("after_step_")):
                found["in_use_before_steps"] = int(words[5])
                found["in_use_after_step_1"] = int(words[7])
                found["in_use_last_step"] = int(words[8][len("after_step_"):])
                found["in_use_after_last_step"] = int(words[9])
    return found


def in_use_line(tpc):
    """The device's memory in use around the steps (the driver's count),
    and whether any was taken after the first step."""
    before, first = tpc["in_use_before_steps"], tpc["in_use_after_step_1"]
    last, k = tpc["in_use_after_last_step"], tpc["in_use_last_step"]
    grew = last - first
    verdict = ("nothing allocated after step 1" if grew == 0 else
               f"{grew:+d} bytes after step 1")
    return (f"GPT-2 step device memory in use (driver): {before / 2**30:.2f} "
            f"GiB before the steps, {first / 2**30:.2f} after step 1 "
            f"({first - before:+d} bytes), {last / 2**30:.2f} after step {k}: "
            f"{verdict}")


def gpt_throughput(args, ops):
    """The TFLOP/s of a GPT step's GEMM and attention opcodes, their FLOPs
    from the model's dimensions (trace-ops's --batch ... --vocab). `ops`
    maps a kind (an opcode, or a fused group's opcodes joined by '+') to
    (calls, us); an opcode's time is that of the kinds it heads."""
    tokens = args.batch * args.seq
    gemm = 2.0 * tokens * (12.0 * args.layers * args.hidden ** 2
                           + args.hidden * args.vocab)
    attention = 2.0 * args.batch * args.layers * args.seq ** 2 * args.hidden
    flops = {"linear": gemm, "linear_input_grad": gemm,
             "linear_weight_grad": gemm, "attention": attention,
             "attention_qkv": attention, "attention_grad": 2.5 * attention,
             "attention_qkv_grad": 2.5 * attention}
    headed = {}
    for kind, (_, us) in ops.items():
        head = kind.split("+")[0]
        headed[head] = headed.get(head, 0.0) + us
    parts = [f"{name} {flops[name] / (us * 1e-6) / 1e12:.1f}"
             for name, us in headed.items() if name in flops and us > 0]
    return ("TFLOP/s from the model's dimensions: " + ", ".join(parts)
            if parts else "TFLOP/s: no GEMM or attention opcode in the step")


def report_kinds(predicted, opcodes):
    """Kernel index -> (its kind in the replay of `predicted`, a report's
    "predicted" section; whether it is its group's last member) for the
    fused groups' and batches' members, by their indices, named as the
    replay names them (PlanSimulation.cpp kindOf) from `opcodes` (kernel
    index -> opcode, from the trace)."""
    fusions = predicted.get("device_fusions") or {}
    kinds = {}
    for group in fusions.get("groups", []):
        name = "+".join(opcodes.get(k, "?") for k in group)
        for k in group:
            kinds[k] = (name, k == group[-1])
    for batch in fusions.get("batches", []):
        names = []
        for k in batch:
            if opcodes.get(k, "?") not in names:
                names.append(opcodes.get(k, "?"))
        for k in batch:
            kinds[k] = (",".join(names) + " batch", k == batch[-1])
    return kinds


def read_prediction(path, rank):
    """(the report's "predicted" section, kind -> predicted seconds of the
    stage of `rank`, kind -> its price there: the description's key that
    set its time, {} in reports before 2026-12-07) from the report at
    `path`, or None after saying why."""
    with open(path) as f:
        report_json = json.load(f)
    predicted = report_json.get("predicted")
    if not predicted:
        print(f"error: {path} has no \"predicted\" section (tpc-compile "
              "--report without --hardware)", file=sys.stderr)
        return None
    mesh = report_json.get("mesh") or {}
    stage = rank // max(1, mesh.get("dp", 1) * mesh.get("tp", 1))
    stages = predicted.get("stages") or []
    if stage >= len(stages):
        print(f"error: {path} has {len(stages)} stages; rank {rank} is on "
              f"stage {stage}", file=sys.stderr)
        return None
    return (predicted, stages[stage].get("kernel_s") or {},
            stages[stage].get("kernel_prices") or {})


def trace_ops(args):
    with open(args.trace) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    # tpc-run --trace: "device" (CUDA events, fusions and batches kept) or
    # "synchronized" (each kernel timed to its end; older files say nothing).
    timed = ("on the device's compute stream: a fused group's time on its "
             "last member, a batch's on the run that launched it"
             if trace.get("tpcTiming") == "device"
             else "synchronized per kernel")
    steps = sorted({e["args"]["step"] for e in events})
    if not steps:
        print(f"error: no kernel events in {args.trace}", file=sys.stderr)
        return 1
    step = args.step if args.step is not None else steps[-1]
    opcodes = {e["args"]["kernel"]: e["name"] for e in events}
    events = [e for e in events if e["args"]["step"] == step]
    if not events:
        print(f"error: no events of step {step} in {args.trace} (steps "
              f"{steps[0]}..{steps[-1]})", file=sys.stderr)
        return 1
    prediction, kinds = None, {}
    if args.report:
        prediction = read_prediction(args.report, events[0].get("pid", 0))
        if prediction is None:
            return 1
        kinds = report_kinds(prediction[0], opcodes)
    total = sum(e["dur"] for e in events)
    ops = {}
    for e in events:
        # A group's or batch's members are one call: counted at its last.
        kind, last = kinds.get(e["args"]["kernel"], (e["name"], True))
        calls, us = ops.get(kind, (0, 0.0))
        ops[kind] = (calls + (1 if last else 0), us + e["dur"])
    ranked = sorted(ops.items(), key=lambda kv: -kv[1][1])
    print(f"step {step} by opcode ({len(events)} kernels, "
          f"{total / 1e3:.1f} ms {timed}): "
          + ", ".join(f"{name} {100 * us / total:.1f}%"
                      for name, (_, us) in ranked[:6]))
    if args.batch:
        print(gpt_throughput(args, ops))
    if prediction is None:
        print(f"{'opcode':<24} {'calls':>6} {'ms':>10} {'share':>7}")
        for name, (calls, us) in ranked:
            print(f"{name:<24} {calls:>6} {us / 1e3:>10.3f} "
                  f"{100 * us / total:>6.1f}%")
    else:
        print_prediction(prediction, ops, total, ranked)
        if getattr(args, "calibrate", None):
            if calibrate(args, ops, prediction[1], prediction[2], step):
                return 1
    print(f"the {args.top} slowest kernels of step {step}:")
    for e in sorted(events, key=lambda e: -e["dur"])[:args.top]:
        print(f"  kernel {e['args']['kernel']:>5} {e['name']:<24} "
              f"{e['dur'] / 1e3:>9.3f} ms")
    return 0


def print_prediction(prediction, ops, total, ranked):
    """trace-ops's lines with a report: the totals and the largest kinds'
    measured/predicted, then the table with the predicted ms beside."""
    predicted, seconds = prediction[:2]
    predicted_us = {kind: s * 1e6 for kind, s in seconds.items()}
    expected = sum(predicted_us.values())
    both = [kind for kind, _ in ranked if predicted_us.get(kind, 0) > 0]
    largest = ", ".join(f"{kind} {ops[kind][1] / predicted_us[kind]:.2f}"
                        for kind in both[:6])
    print(f"measured/predicted (tpc-compile --hardware "
          f"{predicted.get('hardware')}): kernels {total / 1e3:.3f} ms vs "
          f"{expected / 1e3:.3f} ms"
          + (f" ({total / expected:.2f})" if expected > 0 else "")
          + (f"; {largest}" if largest else ""))
    width = max([24] + [len(kind) for kind, _ in ranked])
    print(f"{'kind':<{width}} {'calls':>6} {'ms':>10} {'share':>7} "
          f"{'predicted':>10} {'meas/pred':>9}")
    for name, (calls, us) in ranked:
        guess = predicted_us.get(name)
        print(f"{name:<{width}} {calls:>6} {us / 1e3:>10.3f} "
              f"{100 * us / total:>6.1f}% "
              + (f"{guess / 1e3:>10.3f} " if guess is not None else
                 f"{'-':>10} ")
              + (f"{us / guess:>9.2f}" if guess else f"{'-':>9}"))
    # The report lists the kinds the replay charges time: any other, a copy
    # onto its own bytes say, it charged nothing.
    uncharged = [kind for kind, _ in ranked if kind not in predicted_us]
    if uncharged:
        print("in the trace, charged nothing by the replay: " + ", ".join(
            f"{kind} ({ops[kind][1] / 1e3:.3f} ms)" for kind in uncharged))
    unmeasured = sorted(set(predicted_us) - set(ops))
    if unmeasured:
        print("predicted, not in the trace: " + ", ".join(unmeasured))


# The kernels whose kinds the replay prices by FLOPs (a matrix product and
# its epilogue group, attention) or as communication, not by their bytes:
# lib/Analysis/Hardware.cpp's pricedByOtherTerms, which refuses them in
# elementwise_bandwidth.kinds.
PRICED_BY_OTHER_TERMS = {
    "linear", "linear_input_grad", "linear_weight_grad",
    "linear_weight_grad_accumulate", "batch_matmul", "attention",
    "attention_lse", "attention_grad", "attention_qkv", "attention_qkv_lse",
    "attention_qkv_grad", "all_reduce", "all_gather", "reduce_scatter",
    "all_to_all", "send", "recv", "send_start", "recv_start", "wait"}
# A kind's fraction of the memory bandwidth may not pass this (Hardware.cpp).
MOST_KIND_FRACTION = 10.0


def calibrate(args, ops, seconds, prices, step):
    """--calibrate HW --write OUT: HW (the description the report was
    compiled with) with the prices of the kinds the trace timed fitted to
    it, each to the value at which the replay gives the measured time. A
    kind's replay is its calls' launches plus its bytes or FLOPs at the
    description's price (`prices`: the report's kernel_prices; without
    them, every kind not headed by a product, attention or a collective
    is taken as memory-bound): the new value is the old times the
    predicted time less the launches over the measured time less them.
    A memory-bound kind gets its own elementwise_bandwidth.kinds entry;
    the attention kinds priced by one of attention_own_kernels' values or
    by attention.value fit that value together (fractions, at most 1;
    not where the description has attention_score_s, whose times are not
    the products'). Left as they are: the GEMMs (a curve over sizes: their
    measured/predicted is printed), collectives, kinds of mixed prices,
    and launch-bound ones (launches over half the predicted time: their
    bytes' term is too small to read from the trace). Prints what it
    changed and left and returns 0, or 1 after saying why."""
    with open(args.calibrate) as f:
        hw = json.load(f)
    efficiency = hw.get("efficiency", {})
    elementwise = efficiency.get("elementwise_bandwidth")
    launch = efficiency.get("kernel_launch_s", {}).get("value")
    if not isinstance(elementwise, dict) or launch is None:
        print(f"error: {args.calibrate} has no efficiency."
              "elementwise_bandwidth or kernel_launch_s", file=sys.stderr)
        return 1
    kinds = dict(elementwise.get("kinds", {}))
    changed, left = [], []
    # price -> [predicted less launches, measured less launches, predicted,
    # measured] summed over its kinds, for the attention and GEMM prices.
    shared = {}
    for kind, (calls, us) in sorted(ops.items()):
        predicted = seconds.get(kind, 0.0)
        head = re.split(r"[+, ]", kind)[0]
        price = prices.get(kind) or (
            "product" if head in PRICED_BY_OTHER_TERMS else
            "elementwise_bandwidth")
        if predicted <= 0:
            continue
        launches = calls * launch
        measured = us * 1e-6
        if price in ("communication", "product"):
            continue
        if price == "mixed":
            left.append(f"{kind} (mixed prices)")
            continue
        if predicted - launches < 0.5 * predicted or measured <= launches:
            left.append(f"{kind} (launch-bound)")
            continue
        if not price.startswith("elementwise_bandwidth"):
            sums = shared.setdefault(price, [0.0, 0.0, 0.0, 0.0])
            for i, value in enumerate((predicted - launches,
                                       measured - launches, predicted,
                                       measured)):
                sums[i] += value
            continue
        if head in PRICED_BY_OTHER_TERMS:
            # A product or attention whose bytes took longer than its FLOPs:
            # the description prices it by the one value.
            left.append(f"{kind} (a product priced by its bytes)")
            continue
        old = kinds.get(kind, elementwise["value"])
        new = min(MOST_KIND_FRACTION,
                  old * (predicted - launches) / (measured - launches))
        kinds[kind] = float(f"{new:.4g}")
        changed.append(f"{kind} {old:.4g} -> {kinds[kind]:.4g} "
                       f"({measured / predicted:.2f})")
    stamp = (f"calibrated by benchmarks/cuda/report.py trace-ops --calibrate "
             f"from {os.path.basename(args.trace)} (step {step}) on "
             f"{datetime.date.today().isoformat()}")
    fitted = []
    for price, (predicted, measured, whole, timed) in sorted(shared.items()):
        ratio = f"measured/predicted {timed / whole:.2f}"
        if price == "gemm":
            left.append(f"gemm (a curve over sizes; {ratio})")
            continue
        if price.startswith("gemm_unaligned"):
            # A cap on the products whose rows are not whole 16-byte units:
            # the value, or a kind's own.
            holder = efficiency.get("gemm_unaligned")
            key = "value"
            if price.startswith("gemm_unaligned.kinds."):
                holder = holder.get("kinds") if isinstance(holder, dict) \
                    else None
                key = price.split(".", 2)[2]
        elif "attention_score_s" in efficiency:
            left.append(f"{price} (the description's attention_score_s "
                        f"times are not the products'; {ratio})")
            continue
        elif price == "attention":
            holder, key = efficiency.get("attention"), "value"
        else:
            holder = efficiency.get("attention_own_kernels")
            key = price.split(".", 1)[1]
        if not isinstance(holder, dict) or key not in holder:
            left.append(f"{price} (not in {args.calibrate}; {ratio})")
            continue
        old = holder[key]
        holder[key] = float(f"{min(1.0, old * predicted / measured):.4g}")
        # A kind's own cap: the source is gemm_unaligned's, one level up.
        sourced = efficiency["gemm_unaligned"] if price.startswith(
            "gemm_unaligned.kinds.") else holder
        sourced["source"] = sourced.get("source", "") + f"; {key} {stamp}"
        fitted.append(f"{price} {old:.4g} -> {holder[key]:.4g} "
                      f"({timed / whole:.2f})")
    print(f"calibrated from step {step} (elementwise_bandwidth.kinds, old -> "
          "new (measured/predicted)): " + (", ".join(changed) or "none"))
    if fitted:
        print("calibrated attention and gemm_unaligned (old -> new "
              "(measured/predicted)): " +
              ", ".join(fitted))
    if left:
        print("left as they were: " + ", ".join(left))
    if changed:
        elementwise["kinds"] = kinds
        elementwise["source"] = (elementwise.get("source", "") +
                                 f"; kinds {stamp}")
    with open(args.write, "w") as f:
        json.dump(hw, f, indent=2)
        f.write("\n")
    print(f"wrote {args.write}")
    return 0


def describe(entry):
    if entry["kind"] == "gemm":
        return (f"gemm {entry['m']}x{entry['k']}x{entry['n']} "
                f"({entry.get('layout', 'in_out')})")
    kv = f", kv {entry['kv']}" if entry.get("kv", entry["h"]) != entry["h"] else ""
    what = ("attention backward" if entry["kind"] == "attn_grad"
            else "attention")
    dropout = (f" dropout {entry['dropout']:g}" if entry.get("dropout")
               else "")
    return (f"{what} b {entry['b']} h {entry['h']}{kv} s {entry['s']} "
            f"d {entry['d']} {'causal' if entry['causal'] else 'full'}"
            f"{dropout}")


def merge(args):
    entries = []
    for line in sys.stdin:
        line = line.strip()
        if line.startswith("{"):
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    kernels, order = {}, []
    steps = {}
    for e in entries:
        if e.get("kind") in ("gemm", "attn", "attn_grad"):
            key = e["case"]
            if key not in kernels:
                kernels[key] = {}
                order.append(key)
            kernels[key][e["tool"]] = e
        elif e.get("kind") == "gpt_step":
            steps[e["tool"]] = e
    result = {"kernels": [], "gpt_step": {}, "raw": entries}
    lines = []
    for key in order:
        pair = kernels[key]
        tpc, torch = pair.get("tpc"), pair.get("torch")
        # TPCRT_CUDA_ATTENTION=cudnn's run of the same case (tpc-cuda-bench
        # labels it tpc-cudnn): reported beside, the faster one compared.
        cudnn = pair.get("tpc-cudnn")
        some = tpc or torch or cudnn or pair.get("tpc-mma")
        # TPCRT_CUDA_ATTENTION=mma's (tpc-mma): on Hopper the mma.sync
        # kernels the wgmma ones replaced, reported beside, never compared;
        # alone (device-check.sh's fallback: =mma for every stage) they are
        # what tpc runs.
        mma = pair.get("tpc-mma")
        on_mma = not tpc and mma is not None
        if on_mma:
            tpc = mma
        row = {"case": key, "what": describe(some),
               "tpc_tflops": tpc and tpc["tflops"],
               "torch_tflops": torch and torch["tflops"]}
        text = (f"{row['what']}: tpc "
                + (f"{tpc['tflops']:.1f}" if tpc else "-") + " TFLOP/s")
        if on_mma:
            row["tpc_best"] = "mma"
            text += " on mma.sync"
        elif mma:
            row["tpc_mma_tflops"] = mma["tflops"]
            text += f" (mma.sync {mma['tflops']:.1f})"
        # TPCRT_CUDA_GEMM_ALGO=N's runs (tpc-algoN): cuBLASLt's heuristic's
        # N-th algorithm on the same shape, reported beside; the comparison
        # stays the first's (what the device runs).
        algos = sorted((int(tool[len("tpc-algo"):]), e["tflops"])
                       for tool, e in pair.items()
                       if tool.startswith("tpc-algo") and
                       tool[len("tpc-algo"):].isdigit())
        if algos:
            row["tpc_algo_tflops"] = {str(n): t for n, t in algos}
            text += " (heuristic's " + ", ".join(
                f"#{n} {t:.1f}" for n, t in algos) + ")"
        if cudnn:
            row["tpc_cudnn_tflops"] = cudnn["tflops"]
            text += f", with cuDNN {cudnn['tflops']:.1f}"
            if not tpc or cudnn["tflops"] > tpc["tflops"]:
                tpc = cudnn
                row["tpc_best"] = "cudnn"
        text += " vs torch " + (f"{torch['tflops']:.1f}" if torch else "-") + \
            " TFLOP/s"
        if tpc and torch and torch["tflops"] > 0:
            row["ratio"] = tpc["tflops"] / torch["tflops"]
            text += f" ({row['ratio']:.2f})"
        if some["kind"] == "gemm" and "ratio" in row:
            row["target"] = f">= {GEMM_TARGET_RATIO:.0%} of torch"
            row["met"] = row["ratio"] >= GEMM_TARGET_RATIO
        elif (some["kind"] == "attn" and some["causal"] and some["s"] == 4096
              and not some.get("dropout")
              and some["d"] == 128 and tpc):
            row["target"] = f">= {ATTENTION_TARGET_TFLOPS:.0f} TFLOP/s"
            row["met"] = tpc["tflops"] >= ATTENTION_TARGET_TFLOPS
        best = {k: v for k, v in ((torch or {}).get("backends_tflops") or
                                  {}).items() if isinstance(v, (int, float))}
        if best:
            name = max(best, key=best.get)
            row["torch_best_backend"] = name
            row["torch_best_tflops"] = best[name]
            text += f" [torch's best SDPA backend {name}: {best[name]:.1f}]"
        if "met" in row:
            text += f"  target {row['target']}: {'met' if row['met'] else 'MISSED'}"
        if (some["kind"] == "gemm" and tpc and
                (some["k"] % 8 or some["n"] % 8)):
            # Rows of no whole 16 bytes (bf16): what the description's
            # efficiency.gemm_unaligned caps, as a fraction of the peak.
            row["fraction_of_peak"] = tpc["tflops"] * 1e12 / PEAK_BF16
            text += (f"  [rows of no whole 16 bytes: "
                     f"{row['fraction_of_peak']:.3f} of the bf16 peak, "
                     f"efficiency.gemm_unaligned]")
        result["kernels"].append(row)
        lines.append(text)
    if steps:
        tpc, torch = steps.get("tpc"), steps.get("torch")
        result["gpt_step"] = {"tpc": tpc, "torch": torch}
        some = tpc or torch
        text = (f"GPT-2 step (h {some['hidden']}, L {some['layers']}, "
                f"s {some['seq']}, B {some['batch']}, V {some['vocab']}): ")
        parts = []
        for name, e in (("tpc", tpc), ("torch", torch)):
            if e:
                parts.append(f"{name} {e['step_ms']:.1f} ms MFU "
                             f"{100 * e['mfu']:.1f}%"
                             + (f" [{e['impl']}]" if name == "torch" else ""))
            else:
                parts.append(f"{name} -")
        text += " vs ".join(parts)
        if tpc and torch:
            result["gpt_step"]["speedup"] = torch["step_ms"] / tpc["step_ms"]
            text += f" (tpc/torch speed {result['gpt_step']['speedup']:.2f})"
        lines.append(text)
        memory = []
        if tpc and "device_bytes" in tpc:
            memory.append(f"tpc device memory {tpc['device_bytes'] / 2**30:.2f}"
                          " GiB in one allocation (planned peak "
                          f"{tpc.get('planned_peak_bytes', 0) / 2**30:.2f}, "
                          f"peak {tpc.get('peak_bytes', 0) / 2**30:.2f})")
        if torch and "peak_memory_gib" in torch:
            memory.append(f"torch max_memory_allocated "
                          f"{torch['peak_memory_gib']:.2f} GiB")
        if memory:
            lines.append("GPT-2 step memory: " + " vs ".join(memory))
        if tpc and "in_use_after_last_step" in tpc:
            lines.append(in_use_line(tpc))
        if tpc and tpc.get("predicted_step_ms"):
            ratio = tpc["step_ms"] / tpc["predicted_step_ms"]
            result["gpt_step"]["measured_over_predicted"] = ratio
            lines.append(
                f"GPT-2 step predicted by tpc-compile --hardware "
                f"{tpc.get('predicted_hardware')}: "
                f"{tpc['predicted_step_ms']:.1f} ms MFU "
                f"{100 * (tpc.get('predicted_mfu') or 0):.1f}%, measured "
                f"{tpc['step_ms']:.1f} ms (measured/predicted {ratio:.2f})")
    if not lines:
        lines.append("benchmarks: no results")
    for text in lines:
        print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    step = sub.add_parser("tpc-step")
    step.add_argument("--log", required=True)
    for name in ("batch", "seq", "hidden", "layers", "vocab"):
        step.add_argument("--" + name, type=int, required=True)
    step.add_argument("--report")
    trace = sub.add_parser("trace-ops")
    trace.add_argument("--trace", required=True)
    trace.add_argument("--step", type=int)
    trace.add_argument("--top", type=int, default=12)
    for name in ("batch", "seq", "hidden", "layers", "vocab"):
        trace.add_argument("--" + name, type=int)
    trace.add_argument("--report")
    trace.add_argument("--calibrate", metavar="HARDWARE_JSON",
                       help="with --report and --write: the description "
                       "the report was compiled with, its memory-bound "
                       "kinds' and attention's prices fitted to the trace")
    trace.add_argument("--write", metavar="OUT_JSON")
    merged = sub.add_parser("merge")
    merged.add_argument("--json")
    args = parser.parse_args(argv)
    if args.command == "trace-ops" and (
            bool(args.calibrate) != bool(args.write) or
            (args.calibrate and not args.report)):
        parser.error("trace-ops: --calibrate needs --write and --report "
                     "(and --write needs --calibrate)")
    return {"tpc-step": tpc_step, "trace-ops": trace_ops,
            "merge": merge}[args.command](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
