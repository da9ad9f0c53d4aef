#!/usr/bin/env python3
"""The CUDA benchmarks' arithmetic and summary (test/gpu/device-check.sh).

    report.py tpc-step --log TPC_RUN_OUTPUT --batch B --seq S --hidden H
                       --layers L --vocab V
        reads tpc-run's `step <k> ... tokens_per_s <r>` lines of a training
        run and prints one JSON line: the step time (batch * seq / r,
        averaged over the steps after the first, which warms up) and its MFU.

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
import json
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
    print(json.dumps({
        "tool": "tpc", "kind": "gpt_step", "impl": "tpc-run --device cuda",
        "batch": args.batch, "seq": args.seq, "hidden": args.hidden,
        "layers": args.layers, "vocab": args.vocab,
        "steps_timed": len(timed),
        "timing": "batch*seq / tokens_per_s of the steps after the first",
        "step_ms": seconds * 1e3, "tokens_per_s": tokens / seconds,
        "mfu": mfu(seconds, args.batch, args.seq, args.hidden, args.layers,
                   args.vocab),
        "losses": losses}))
    return 0


def describe(entry):
    if entry["kind"] == "gemm":
        return (f"gemm {entry['m']}x{entry['k']}x{entry['n']} "
                f"({entry.get('layout', 'in_out')})")
    kv = f", kv {entry['kv']}" if entry.get("kv", entry["h"]) != entry["h"] else ""
    return (f"attention b {entry['b']} h {entry['h']}{kv} s {entry['s']} "
            f"d {entry['d']} {'causal' if entry['causal'] else 'full'}")


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
        if e.get("kind") in ("gemm", "attn"):
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
        row = {"case": key, "what": describe(some),
               "tpc_tflops": tpc and tpc["tflops"],
               "torch_tflops": torch and torch["tflops"]}
        text = (f"{row['what']}: tpc "
                + (f"{tpc['tflops']:.1f}" if tpc else "-") + " TFLOP/s")
        # TPCRT_CUDA_ATTENTION=mma's (tpc-mma): on Hopper the mma.sync
        # forward the wgmma one replaced, reported beside, never compared.
        mma = pair.get("tpc-mma")
        if mma:
            row["tpc_mma_tflops"] = mma["tflops"]
            text += f" (mma.sync {mma['tflops']:.1f})"
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
    merged = sub.add_parser("merge")
    merged.add_argument("--json")
    args = parser.parse_args(argv)
    return tpc_step(args) if args.command == "tpc-step" else merge(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
