#!/usr/bin/env python3
"""check_hardware_json.py CPU.json [--tool TPC_MEASURE_HARDWARE]

Checks a hardware description that tpc-measure-hardware wrote against the
format of docs/design/hardware-format.md: exactly the keys of the format (an
unknown key is an error there too), positive numbers, fractions in (0, 1],
points with strictly ascending x, and a "source" naming the tool on every
measured figure. With --tool, also checks the tool's command line: --help
exits 0, and bad flags print "error: ..." and exit 1. Prints one line per
failed check; exits 1 if any.
"""

import json
import math
import subprocess
import sys

failures = []


def fail(message):
    failures.append(message)
    print("FAIL: " + message)


def number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def positive(where, value):
    if not number(value) or value <= 0:
        fail(f"{where}: {value!r} is not a positive number")


def fraction(where, value):
    if not number(value) or not 0 < value <= 1:
        fail(f"{where}: {value!r} is not a fraction in (0, 1]")


def keys(where, obj, expected):
    if not isinstance(obj, dict):
        fail(f"{where}: not an object")
        return False
    missing = sorted(set(expected) - set(obj))
    extra = sorted(set(obj) - set(expected))
    if missing:
        fail(f"{where}: missing {missing}")
    if extra:
        fail(f"{where}: unknown keys {extra}")
    return not missing


def source(where, obj):
    text = obj.get("source")
    if not isinstance(text, str) or not text:
        fail(f"{where}.source: missing or empty")
    elif not text.startswith("measured by tpc-measure-hardware on "):
        fail(f"{where}.source: {text[:60]!r}... does not say it was measured "
             "by tpc-measure-hardware")


def points(where, obj):
    pts = obj.get("points")
    if not isinstance(pts, list) or not pts:
        fail(f"{where}.points: not a non-empty list")
        return
    last = None
    for i, p in enumerate(pts):
        if not (isinstance(p, list) and len(p) == 2):
            fail(f"{where}.points[{i}]: {p!r} is not a pair")
            continue
        positive(f"{where}.points[{i}][0]", p[0])
        fraction(f"{where}.points[{i}][1]", p[1])
        if number(p[0]) and last is not None and not p[0] > last:
            fail(f"{where}.points: x not ascending at [{i}] ({p[0]} after "
                 f"{last})")
        if number(p[0]):
            last = p[0]
    if all(isinstance(p, list) and len(p) == 2 and number(p[1]) for p in pts):
        if max(p[1] for p in pts) < 0.999 and where.endswith("gemm"):
            fail(f"{where}.points: the best shape is the peak, yet no "
                 "fraction is 1")


# The memory-bound kernels tpc-measure-hardware times one by one.
ELEMENTWISE_KINDS = [
    "add", "gelu", "layer_norm", "softmax", "mul", "gelu_grad", "silu",
    "silu_grad", "layer_norm_input_grad", "layer_norm_param_grad", "rms_norm",
    "rms_norm_input_grad", "rms_norm_param_grad", "sum_to", "dropout_mask",
    "apply_mask", "cross_entropy", "cross_entropy_grad", "sum_squares",
    "adamw_update"]


def check_json(path):
    try:
        with open(path) as f:
            hw = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")
        return
    top = ["name", "description", "memory_bytes", "memory_source",
           "devices_per_node", "peak_flops", "memory_bandwidth", "intra_node",
           "inter_node", "efficiency"]
    keys("top level", hw, top)
    if hw.get("name") != "cpu":
        fail(f"name: {hw.get('name')!r}, expected 'cpu'")
    if not isinstance(hw.get("description"), str) or not hw["description"]:
        fail("description: not a non-empty string")
    source("top level (memory_source)",
           {"source": hw.get("memory_source")})
    if "cores" not in str(hw.get("description")):
        fail("description: does not give the core count")
    for k in ["memory_bytes", "devices_per_node"]:
        if not isinstance(hw.get(k), int) or hw.get(k) <= 0:
            fail(f"{k}: {hw.get(k)!r} is not a positive integer")
    pf = hw.get("peak_flops", {})
    # A CPU description has fp32 only (the CPU device computes in fp32).
    if keys("peak_flops", pf, ["fp32", "source"]):
        positive("peak_flops.fp32", pf["fp32"])
        source("peak_flops", pf)
    mb = hw.get("memory_bandwidth", {})
    if keys("memory_bandwidth", mb, ["bytes_per_s", "source"]):
        positive("memory_bandwidth.bytes_per_s", mb["bytes_per_s"])
        source("memory_bandwidth", mb)
    for link in ["intra_node", "inter_node"]:
        obj = hw.get(link, {})
        if keys(link, obj, ["bytes_per_s", "latency_s", "source"]):
            positive(f"{link}.bytes_per_s", obj["bytes_per_s"])
            positive(f"{link}.latency_s", obj["latency_s"])
            source(link, obj)
            if number(obj["latency_s"]) and obj["latency_s"] > 0.1:
                fail(f"{link}.latency_s: {obj['latency_s']} s is implausible")
    eff = hw.get("efficiency", {})
    if not keys("efficiency", eff,
                ["gemm", "attention", "attention_score_s",
                 "elementwise_bandwidth", "collective_bus_bandwidth",
                 "kernel_launch_s"]):
        return
    if keys("efficiency.gemm", eff["gemm"], ["points", "source"]):
        points("efficiency.gemm", eff["gemm"])
        source("efficiency.gemm", eff["gemm"])
    for k in ["attention", "elementwise_bandwidth"]:
        extra = ["kinds"] if k == "elementwise_bandwidth" else []
        if keys(f"efficiency.{k}", eff[k], ["value", "source"] + extra):
            fraction(f"efficiency.{k}.value", eff[k]["value"])
            source(f"efficiency.{k}", eff[k])
    kinds = eff["elementwise_bandwidth"].get("kinds")
    if keys("efficiency.elementwise_bandwidth.kinds", kinds, ELEMENTWISE_KINDS):
        for kind, value in kinds.items():
            # The arrays measured are beyond the last-level cache; a kernel
            # that reads much and writes little (sum_to) may pass the
            # bandwidth of add's read + write streams (no write-allocate
            # traffic), not by 4 times.
            if not number(value) or not 0 < value <= 4:
                fail(f"efficiency.elementwise_bandwidth.kinds.{kind}: "
                     f"{value!r} is not a plausible fraction of the memory "
                     "bandwidth (0 to 4)")
    per_score = eff["attention_score_s"]
    directions = ["forward", "backward", "forward_dropout", "backward_dropout"]
    if keys("efficiency.attention_score_s", per_score,
            directions + ["row_forward", "row_backward", "block_rows",
                          "source"]):
        for k in ["row_forward", "row_backward"]:
            value = per_score[k]
            if not number(value) or value < 0 or value > 1e-3:
                fail(f"efficiency.attention_score_s.{k}: {value!r} is not a "
                     "plausible time per query row (0 to 1 ms)")
        if per_score["block_rows"] != 64:
            fail("efficiency.attention_score_s.block_rows: "
                 f"{per_score['block_rows']!r}, not the CPU kernels' 64 "
                 "(cpu::kAttentionBlock)")
        for k in directions:
            value = per_score[k]
            if not number(value) or value < 0 or value > 1e-3:
                fail(f"efficiency.attention_score_s.{k}: {value!r} is not a "
                     "plausible time per score (0 to 1 ms)")
        for k in ["forward", "backward"]:
            if (number(per_score[k]) and number(per_score[k + "_dropout"])
                    and per_score[k + "_dropout"] < per_score[k]):
                fail(f"efficiency.attention_score_s.{k}_dropout: less than "
                     f"{k} (the dropout's draws add to a score's time)")
        source("efficiency.attention_score_s", per_score)
    cbb = eff["collective_bus_bandwidth"]
    if keys("efficiency.collective_bus_bandwidth", cbb,
            ["intra_node", "inter_node"]):
        for link in ["intra_node", "inter_node"]:
            where = f"efficiency.collective_bus_bandwidth.{link}"
            if keys(where, cbb[link], ["points", "source"]):
                points(where, cbb[link])
                source(where, cbb[link])
    kl = eff["kernel_launch_s"]
    if keys("efficiency.kernel_launch_s", kl, ["value", "source"]):
        positive("efficiency.kernel_launch_s.value", kl["value"])
        source("efficiency.kernel_launch_s", kl)
        if number(kl["value"]) and kl["value"] > 1e-2:
            fail(f"efficiency.kernel_launch_s.value: {kl['value']} s is "
                 "implausible")


def check_tool(tool):
    result = subprocess.run([tool, "--help"], capture_output=True, text=True,
                            timeout=30)
    if result.returncode != 0 or "--ranks" not in result.stdout:
        fail(f"--help: exit {result.returncode}, stdout "
             f"{result.stdout[:80]!r}")
    for args, expected in [
            ([], "no output given"),
            (["--bogus"], "unknown flag '--bogus'"),
            (["-x"], "unknown flag '-x'"),
            (["-o"], "--output needs a value"),
            (["-o", "a.json", "-o", "b.json"], "--output is given twice"),
            (["-o", "a.json", "--ranks", "1"], "--ranks: must be at least 2"),
            (["-o", "a.json", "--ranks", "two"], "is not a non-negative"),
            (["-o", "a.json", "--quick=yes"], "--quick takes no value"),
            (["-o", "/nonexistent-dir/cpu.json"], "no directory"),
            (["-o", "a.json", "stray"], "unexpected argument 'stray'")]:
        result = subprocess.run([tool] + args, capture_output=True,
                                text=True, timeout=30)
        if (result.returncode != 1 or
                not result.stderr.startswith("error: ") or
                expected not in result.stderr):
            fail(f"{args}: exit {result.returncode}, stderr "
                 f"{result.stderr.strip()!r}; expected 'error: ...{expected}'")


def main():
    args = sys.argv[1:]
    tool = None
    if "--tool" in args:
        i = args.index("--tool")
        if i + 1 >= len(args):
            sys.exit("usage: check_hardware_json.py CPU.json [--tool TOOL]")
        tool = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: check_hardware_json.py CPU.json [--tool TOOL]")
    check_json(args[0])
    if tool:
        check_tool(tool)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print(f"{args[0]}: ok")


if __name__ == "__main__":
    main()
