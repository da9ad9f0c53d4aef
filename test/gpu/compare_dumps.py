#!/usr/bin/env python3
"""Compares tpc-run dumps of two devices, tensor by tensor.

    compare_dumps.py [--tol T] [--label NAME] [--json OUT] [--skip REGEX]
                     [--after-adamw [--grads GRADS_A GRADS_B [--lr-log LOG]]]
                     [--reference R [--reference R2 ...]]
                     [--logs LOG_A LOG_B] A B [A2 B2 ...]

Each pair A, B is two safetensors files (--dump-grads, --dump-outputs or a
single-file --save-checkpoint) of the same executable run on two devices
(test/gpu/device-check.sh: --device cpu and --device cuda from the same
weights and batch). Every tensor of A must be in B with the same dtype and
shape; each is compared norm-wise:

    rel = ||a - b||_2 / max(||a||_2, ||b||_2)      (0 when both are zero)

and must be <= T (default 1e-4); a NaN or infinity fails. Integer tensors
(counts, steps, seeds) must be equal. Tensors whose name matches --skip
(re.search) are left out, and counted. --logs compares the `step <k> loss
... grad_norm ...` lines tpc-run printed on the two devices (every step's
loss and grad_norm, relative, within T plus the printed digits). Prints one
line per pair (its worst tensor) and a line per failing tensor; exit status
0 when all pass, 1 otherwise, 2 on a usage or file error.

Why norm-wise 1e-4 in float32: what is compared is a whole training step's
chain (embedding, every layer's forward and backward, the loss, clipping,
AdamW), where the two devices sum in other orders (cuBLAS against OpenBLAS
or the CPU fallback GEMM, other reduction trees). Each sum's rounding is
~sqrt(n)*u (u = 6e-8), and the chain amplifies it: on the tiny GPT-2 the
first layer's gradients of any float32 implementation are 3-8e-6 away from
float64, and two float32 implementations up to twice that apart
(docs/testing/tolerances.md, where the mesh-vs-one-device check of the same
model's gradients uses 6e-5). 1e-4 leaves that headroom while a wrong
kernel (a wrong index, a missing scale, another dropout draw) is off by
1e-2 or more. Norm-wise, not element-wise: an element near zero that
cancels has a large relative error in any float32 implementation. For bf16
models (--tol 2e-2): every kernel rounds its result to bf16 (u = 4e-3), and a
float32 sum that lands on the other side of a bf16 rounding boundary moves
that element by one bf16 unit on one device only.

Params and optimizer state after AdamW's update (a --save-checkpoint) hold
one exception, left out with --skip: an element whose exact gradient is zero
gets float32 noise (~1e-10) as its gradient, which AdamW's g / (sqrt(v) +
eps) turns into an update of up to lr of either sign, different in every
implementation. GPT-2's attention key bias (the middle third of
attn.c_attn.bias) is such: q·(k + b) shifts every score of a query alike,
and softmax ignores that. Measured between two CPU builds (OpenBLAS and the
fallback GEMM) after two steps of the tiny models: c_attn.bias 4e-4 apart
(bf16: 4e-2), every other param and state within 9e-6 (bf16: 7e-4), the
first step's gradients within 7e-7 (bf16: 1.5e-5), the losses within 1e-7.

--after-adamw: the files are checkpoints after two AdamW steps whose first
gradients were compared with T; their float tensors are held to 2 T. The
second step's gradients are taken at params that already differ, and to
first order AdamW doubles a gradient's relative difference twice over: v =
sum (1 - b2) g^2 carries twice g's, the update m / sqrt(v) m's plus half of
v's, which is the whole param where it started at zero (biases). Measured
through the emulated device (gpt2-tiny in bf16, 2 steps): first gradients
up to 7.5e-3 apart, ln_1.bias.exp_avg 1.3e-2, ln_1.bias.exp_avg_sq 1.5e-2,
mlp.c_proj.bias 1.6e-2.

That first-order argument fails where a gradient is near zero: AdamW's
first update is g / (|g| + eps), the sign of g, and an element whose two
devices' gradients have other signs steps +lr on one and -lr on the other,
however close the gradients are. In a param that started at zero (biases)
that is the whole param: the bf16 tiny GPT-2 failed 2 T for 4 of 6 dropout
and init seeds (the seed the device check uses passed by chance; ln_1.bias
1.8e-1 apart). --grads GRADS_A GRADS_B (the first gradients, --dump-grads)
leaves out of a param's difference the elements whose two gradients differ
by more than a quarter of the larger, counted; with --lr-log LOG (a
tpc-run output: the sum of its steps' lr) each must still be within
2 x 1.01 x that sum: Adam's step of one element, |m^ / (sqrt(v^) + eps)|,
is at most 1.0014 at the second step with the default betas
(Cauchy-Schwarz), so two runs end at most that far apart. The others, and
the optimizer state (smooth in the gradients), stay within 2 T. Measured
(the same 6 seeds, emulated device): GPT-2 bf16 every seed passes, worst
1.8e-2, about 1500 of 121k elements left out; Llama bf16 1.7e-2, 3300 of
246k; GPT-2 fp32 3.1e-5, at most 1 element left out. Such an element in
a weight matrix (not a bias) moves the second step of the other tensors
too, which 2 T does not cover: emulated-random.sh's seed 37, r37-6 (fp32,
pp = 2, full recomputation; the same bytes under every thread schedule) had
one value-projection weight element whose first gradients were 6.3e-9 and
-1.9e-9, and its first steps of +lr and -lr left the first layer norm's
exp_avg_sq 3.7e-4 apart, with every first gradient within 5.6e-7 and the
losses within 2e-7; from --init-seed 8 the same executables agree within
1.2e-5 after AdamW, nothing left out. A pair that fails only so, after
AdamW with an element left out, is no kernel error by itself: rerun it
from another --init-seed.

--reference R, once per pair (in order: the same dump of a float32 run
of the same model, weights and batch; for bf16 models): a float tensor over
its bound passes where B is no farther from R than A is, within a ratio,

    ||b - r|| <= 2 ||a - r||      (norms relative to ||r||)

and is counted as such. The two devices' bf16 runs each differ from the
float32 run by bf16 rounding carried through the chain, and that grows with
depth: a 4-layer bf16 Llama's last k_proj gradient is 1.9e-2 (CPU) and
1.5e-2 (emulated device) from the float32 run, and 2.1e-2 from each other,
over 2e-2. What the devices must agree on is then that the device's bf16
run is as good an approximation of the float32 step as the CPU's; a wrong
kernel moves B away from R where A stays (B's distance grows as
sqrt(A^2 + d^2) for an error d of its own: one above 1.7 A fails). 2:
measured on the emulated device (test/gpu/emulated-random.sh, seeds 1-6,
30 bf16 configurations), the ratio stayed within 1.61 on the 302 tensors
whose two runs differ by more than 1e-2 (1.43 on the 36 above 1.5e-2); it
reaches 2.0 only on small tensors (norm weights of 64 elements) at
differences of 5e-3, which need no rescue. The elements --grads leaves out
are left out of these norms too.

Reads safetensors itself (8-byte little-endian header length, JSON header,
raw little-endian data): no `safetensors` package needed; numpy is used when
importable, else plain Python.
"""

import argparse
import json
import math
import re
import struct
import sys

try:
    import numpy as np
except ImportError:  # plain Python below
    np = None

_FORMATS = {"F32": ("f", 4), "F64": ("d", 8), "F16": ("e", 2),
            "I64": ("q", 8), "I32": ("i", 4), "I16": ("h", 2),
            "I8": ("b", 1), "U64": ("Q", 8), "U32": ("I", 4),
            "U16": ("H", 2), "U8": ("B", 1), "BOOL": ("?", 1),
            "BF16": ("H", 2)}


def read_safetensors(path):
    """{name: (dtype, shape, values)}; values a float64 numpy array, or a
    list of Python floats/ints without numpy."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than a safetensors header")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise ValueError(f"{path}: header length {n} past the file's end")
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = info["dtype"], info["shape"]
        begin, end = info["data_offsets"]
        if dtype not in _FORMATS:
            raise ValueError(f"{path}: {name}: dtype {dtype} not handled")
        code, size = _FORMATS[dtype]
        raw = body[begin:end]
        count = (end - begin) // size
        if np is not None:
            if dtype == "BF16":
                bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
                values = bits.view(np.float32).astype(np.float64)
            else:
                values = np.frombuffer(raw, dtype="<" + code)
                if dtype[0] == "F":
                    values = values.astype(np.float64)
        else:
            values = list(struct.unpack(f"<{count}{code}", raw))
            if dtype == "BF16":
                values = [struct.unpack("<f", struct.pack("<I", v << 16))[0]
                          for v in values]
        tensors[name] = (dtype, shape, values)
    return tensors


def compare(a, b, leave_out=()):
    """(relative norm-wise difference, finite); the elements at `leave_out`
    count in the norms, not in the difference."""
    if np is not None:
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            return math.inf, False
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        d = a - b
        d[np.asarray(leave_out, dtype=np.int64)] = 0.0
        diff = np.linalg.norm(d)
    else:
        if not all(map(math.isfinite, a)) or not all(map(math.isfinite, b)):
            return math.inf, False
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        out = set(leave_out)
        diff = math.sqrt(sum((x - y) ** 2 for i, (x, y) in enumerate(zip(a, b))
                             if i not in out))
    scale = max(na, nb)
    return (0.0 if scale == 0 else float(diff / scale)), True


# --reference: a tensor over its bound passes where B's distance to the
# float32 run is at most this times A's (module docstring).
REFERENCE_RATIO = 2.0


def reference_distances(va, vb, vr, leave_out=()):
    """(||a - r||, ||b - r||) relative to ||r|| (to the larger of the three
    norms where r is zero), the elements at `leave_out` left out."""
    if np is not None:
        vr = np.asarray(vr, dtype=np.float64)
        da, db = va - vr, vb - vr
        out = np.asarray(leave_out, dtype=np.int64)
        da[out] = 0.0
        db[out] = 0.0
        scale = np.linalg.norm(vr)
        if scale == 0:
            scale = max(np.linalg.norm(va), np.linalg.norm(vb))
        ea, eb = np.linalg.norm(da), np.linalg.norm(db)
    else:
        out = set(leave_out)
        ea = math.sqrt(sum((x - z) ** 2 for i, (x, z) in enumerate(zip(va, vr))
                           if i not in out))
        eb = math.sqrt(sum((y - z) ** 2 for i, (y, z) in enumerate(zip(vb, vr))
                           if i not in out))
        scale = math.sqrt(sum(z * z for z in vr)) or max(
            math.sqrt(sum(x * x for x in va)), math.sqrt(sum(y * y for y in vb)))
    if scale == 0:
        return 0.0, 0.0
    return float(ea / scale), float(eb / scale)


# Adam's step of one element, |m^ / (sqrt(v^) + eps)|, is at most
# (1 - b1) / (1 - b1^t) * sqrt((1 - b2^t) / (1 - b2)) *
# sqrt(sum_k (b1^2 / b2)^k) by Cauchy-Schwarz: 1 at t = 1, 1.0014 at t = 2
# (b1 0.9, b2 0.999). So one device moves an element by at most this much
# times the sum of the steps' learning rates (weight decay moves both alike).
ADAM_STEP_BOUND = 1.01


def disagreeing(ga, gb):
    """Indices of the elements whose two first gradients differ by more than
    a quarter of the larger: near a sign change, where AdamW's sign-like
    update (g / (|g| + eps) at the first step) may go either way."""
    if np is not None:
        ga, gb = np.asarray(ga), np.asarray(gb)
        far = np.abs(ga - gb) > 0.25 * np.maximum(np.abs(ga), np.abs(gb))
        return np.flatnonzero(far).tolist()
    return [i for i, (x, y) in enumerate(zip(ga, gb))
            if abs(x - y) > 0.25 * max(abs(x), abs(y))]


def compare_pair(path_a, path_b, tol, skip=None, after_adamw=False,
                 grads=None, lr_sum=None, left_out=None, reference=None,
                 within_reference=None):
    """(passed, worst (rel, name), failure lines, per-tensor results,
    skipped names). --after-adamw (module docstring): within 2 tol; with
    `grads` (the two devices' first gradients, {name: (dtype, shape,
    values)} each) a param's elements whose gradients disagree are left
    out of its difference (counted in `left_out`, {name: count}), and with
    `lr_sum` each must be within 2 * ADAM_STEP_BOUND * lr_sum. With
    `reference` (a float32 run's file of the same dump) a float tensor over
    the bound passes where b's distance to it is at most REFERENCE_RATIO
    times a's, put in `within_reference` ({name: (rel, a's, b's)})."""
    bound = 2 * tol if after_adamw else tol
    a, b = read_safetensors(path_a), read_safetensors(path_b)
    r = read_safetensors(reference) if reference else {}
    failures, results = [], {}
    worst = (0.0, "")
    skipped = sorted(n for n in set(a) | set(b) if skip and skip.search(n))
    for name in sorted(set(a) - set(skipped)):
        if name not in b:
            failures.append(f"  {name}: missing from {path_b}")
            continue
        (da, sa, va), (db, sb, vb) = a[name], b[name]
        if da != db or sa != sb:
            failures.append(f"  {name}: {da}{sa} vs {db}{sb}")
            continue
        if da == "BOOL" or da[0] in "IU":  # exact (BF16 is a float)
            same = (list(va) == list(vb))
            results[name] = 0.0 if same else math.inf
            if not same:
                failures.append(f"  {name}: integers differ")
            continue
        apart = []
        if after_adamw and grads and name in grads[0] and name in grads[1]:
            apart = disagreeing(grads[0][name][2], grads[1][name][2])
        rel, finite = compare(va, vb, apart)
        results[name] = rel
        if rel > worst[0] or not worst[1]:
            worst = (rel, name)
        without = (f" (without {len(apart)} elements whose first gradients "
                   "disagree)" if len(apart) else "")
        if not finite:
            failures.append(f"  {name}: NaN or infinity")
        elif rel > bound:
            near = ""
            if name in r and r[name][1] == sa and r[name][0][0] in "FB":
                ea, eb = reference_distances(va, vb, r[name][2], apart)
                if eb <= REFERENCE_RATIO * ea:
                    if within_reference is not None:
                        within_reference[name] = (rel, ea, eb)
                    near = None
                else:
                    near = (f"; from the float32 run {ea:.3e} (A), {eb:.3e} "
                            f"(B) > {REFERENCE_RATIO:g} x A's")
            if near is not None:
                failures.append(f"  {name}: relative difference {rel:.3e} > "
                                f"{bound:g}{without}{near}")
        if len(apart) and finite:
            if left_out is not None:
                left_out[name] = len(apart)
            farthest = (float(np.max(np.abs(va[apart] - vb[apart])))
                        if np is not None else
                        max(abs(va[i] - vb[i]) for i in apart))
            limit = 2 * ADAM_STEP_BOUND * lr_sum if lr_sum else math.inf
            if farthest > limit:
                failures.append(
                    f"  {name}: an element whose first gradients disagree "
                    f"moved {farthest:.3e} apart > {limit:.3e} (two AdamW "
                    "runs' farthest: 2 x 1.01 x the steps' lr)")
    for name in sorted(set(b) - set(a) - set(skipped)):
        failures.append(f"  {name}: only in {path_b}")
    return not failures, worst, failures, results, skipped


def step_lines(path):
    """{step: {"loss": x, "grad_norm": y, ...}} from tpc-run's output."""
    steps = {}
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) >= 3 and words[0] == "step":
                values = {}
                for key, value in zip(words[2::2], words[3::2]):
                    try:
                        values[key] = float(value)
                    except ValueError:
                        pass
                steps[int(words[1])] = values
    return steps


def compare_logs(path_a, path_b, tol):
    """(passed, lines) for the loss and grad_norm of every step."""
    a, b = step_lines(path_a), step_lines(path_b)
    lines, passed = [], bool(a) and sorted(a) == sorted(b)
    if not passed:
        lines.append(f"  steps {sorted(a)} in {path_a}, {sorted(b)} in {path_b}")
    for step in sorted(set(a) & set(b)):
        for key in ("loss", "grad_norm"):
            if key not in a[step] and key not in b[step]:
                continue
            x, y = a[step].get(key, math.nan), b[step].get(key, math.nan)
            scale = max(abs(x), abs(y))
            rel = abs(x - y) / scale if scale else 0.0
            # Printed with 6 decimals (loss) or 7 digits (grad_norm).
            ok = math.isfinite(rel) and rel <= tol + 1e-6 / max(scale, 1e-30)
            passed &= ok
            lines.append(f"  step {step} {key}: {x:.7g} vs {y:.7g} "
                         f"(relative {rel:.2e}){'' if ok else '  FAIL'}")
    return passed, lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--label", default="")
    parser.add_argument("--json", help="append the results as one JSON line")
    parser.add_argument("--skip", type=re.compile,
                        help="leave out the tensors whose name matches")
    parser.add_argument("--after-adamw", action="store_true",
                        help="checkpoints after two AdamW steps: floats "
                        "within 2 T")
    parser.add_argument("--logs", nargs=2, metavar=("LOG_A", "LOG_B"),
                        help="tpc-run outputs whose step lines to compare")
    parser.add_argument("--grads", nargs=2, metavar=("GRADS_A", "GRADS_B"),
                        help="with --after-adamw: the two devices' first "
                        "gradients (--dump-grads); a param's elements whose "
                        "gradients disagree are left out of its difference")
    parser.add_argument("--lr-log", metavar="LOG",
                        help="with --grads: a tpc-run output whose steps' lr "
                        "bound how far a left-out element may move")
    parser.add_argument("--reference", action="append", metavar="R",
                        help="once per pair, in order: a float32 run's file "
                        "of the same dump; a tensor over its bound passes "
                        "where B is no farther from it than 2 x A")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    if len(args.files) % 2:
        parser.error("files come in pairs (A B)")
    if args.reference and len(args.reference) != len(args.files) // 2:
        parser.error(f"--reference names {len(args.reference)} files for "
                     f"{len(args.files) // 2} pairs")
    ok, report = True, {"label": args.label, "tol": args.tol, "pairs": []}
    prefix = args.label + ": " if args.label else ""
    if args.logs:
        try:
            passed, lines = compare_logs(args.logs[0], args.logs[1], args.tol)
        except (OSError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        ok &= passed
        print(f"{prefix}{'ok  ' if passed else 'FAIL'} step lines of "
              f"{args.logs[0]} vs {args.logs[1]}")
        for line in lines:
            print(line)
        report["logs_passed"] = passed
    grads, lr_sum = None, None
    try:
        if args.grads:
            grads = (read_safetensors(args.grads[0]),
                     read_safetensors(args.grads[1]))
        if args.lr_log:
            lr_sum = sum(step.get("lr", 0.0)
                         for step in step_lines(args.lr_log).values())
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for i in range(0, len(args.files), 2):
        path_a, path_b = args.files[i], args.files[i + 1]
        left_out, near = {}, {}
        reference = args.reference[i // 2] if args.reference else None
        try:
            passed, worst, failures, results, skipped = compare_pair(
                path_a, path_b, args.tol, args.skip, args.after_adamw, grads,
                lr_sum, left_out, reference, near)
        except (OSError, ValueError, KeyError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        ok &= passed
        apart = ""
        if left_out:
            within = (f"; each within {2 * ADAM_STEP_BOUND * lr_sum:.3g}"
                      if lr_sum else "")
            apart = (f", {sum(left_out.values())} elements of "
                     f"{len(left_out)} params left out (first gradients "
                     f"disagree{within})")
        within = ""
        if near:
            ratio = max(eb / ea if ea else math.inf for _, ea, eb in near.values())
            within = (f", {len(near)} over it no farther from the float32 "
                      f"run than A (B/A at most {ratio:.2f})")
        print(f"{prefix}{'ok  ' if passed else 'FAIL'} {path_a} vs {path_b}: "
              f"{len(results)} tensors, worst {worst[0]:.3e} ({worst[1]}), "
              f"tolerance {(2 if args.after_adamw else 1) * args.tol:g}"
              + (" (2 T: --after-adamw)" if args.after_adamw else "")
              + (f", {len(skipped)} left out (--skip)" if skipped else "")
              + apart + within)
        for line in failures:
            print(line)
        for name, (rel, ea, eb) in sorted(near.items()):
            print(f"  {name}: {rel:.3e} apart; from the float32 run "
                  f"{ea:.3e} (A), {eb:.3e} (B)")
        report["pairs"].append({"a": path_a, "b": path_b, "passed": passed,
                                "worst": worst[0], "worst_tensor": worst[1],
                                "tensors": results, "skipped": skipped,
                                "left_out": left_out,
                                "within_reference": near})
    report["passed"] = ok
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(report) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
