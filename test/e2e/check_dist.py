#!/usr/bin/env python3
"""End to end distributed training: tpc-compile --mesh + tpc-run --ranks.

For one named case (a model, a mesh dp x tp, sequence parallelism on or off,
a dropout rate, microbatches): the same random weights and fixed batch are
trained for a few AdamW steps on the mesh's ranks (`tpc-run --ranks N`), one
step per run from the mesh's own checkpoint, and each step is run again on
one device from the same checkpoint. Every step is checked from the state
the mesh had before it (step_check.py says why not a free-running
trajectory); the tolerances are what float32 promises (tolerances.py: 8x
torch float32's error on the same step; two float32 runs may differ by twice
that):
  - every parameter's gradient (dumped whole by rank 0), the loss and the
    grad_norm equal the single-device run's from the same state;
  - the params and the sharded optimizer state after the step equal the
    float64 update of the mesh's state and gradients within its float32
    bound, element by element (gathered whole from the ranks);
  - every rank's measured peak equals its planned peak;
  - with dropout 0, the gradients and the loss also equal float64 PyTorch
    autograd on the same weights;
  - with dropout, the run differs from the dropout-0 one (the masks are
    really drawn), yet equals the single-device run: each rank drew the
    single-device mask of its elements.
Exit status 0: equal; 1: a difference or a tool failed; 77: no torch or no
MPI launcher.

    check_dist.py --bin-dir build/bin --src-root . --work-dir /tmp/x --case gpt2-tp2-sp
"""

import json
import os
import re
import shutil
import sys

try:
    import torch
except ImportError:
    print("torch is not importable by %s: skipped" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support  # noqa: E402
from e2e_support import run  # noqa: E402
import step_check  # noqa: E402
import tolerances  # noqa: E402
import tpc_torch  # noqa: E402

BATCH, SEQ, STEPS = 4, 16, 3
MODELS = {"gpt2": "examples/configs/gpt2-tiny.json",
          "llama": "examples/configs/llama-tiny.json"}


def make_cases():
    """The matrix of issue 5: tp in {1, 2, 4} x sequence parallelism x dp in
    {1, 2} (at most 8 ranks), for both models, with dropout 0 and 0.1."""
    cases = {}
    for model in MODELS:
        for tp in (1, 2, 4):
            for sp in ((False, True) if tp > 1 else (False,)):
                for dp in (1, 2):
                    if tp * dp == 1:
                        continue
                    for dropout in (0.0, 0.1):
                        # (Llama: attention dropout only, grouped-query heads split.)
                        name = "%s-dp%d-tp%d%s%s" % (model, dp, tp, "-sp" if sp else "",
                                                     "-dropout" if dropout else "")
                        cases[name] = dict(model=model, dp=dp, tp=tp, sp=sp,
                                           dropout=dropout, microbatches=1)
    # Microbatches with every kind of parallelism at once.
    cases["gpt2-dp2-tp2-sp-mb2-dropout"] = dict(model="gpt2", dp=2, tp=2, sp=True,
                                                dropout=0.1, microbatches=2)
    cases["llama-dp2-tp2-mb2"] = dict(model="llama", dp=2, tp=2, sp=False, dropout=0.0,
                                      microbatches=2)
    # A vocabulary not divisible by tp (like GPT-2's 50257): padded to 252
    # and masked, every gradient (the embedding's real rows) unchanged.
    cases["gpt2-vocab250-dp1-tp4-sp"] = dict(model="gpt2", dp=1, tp=4, sp=True, dropout=0.0,
                                             microbatches=1, vocab=250)
    cases["llama-vocab250-dp2-tp4"] = dict(model="llama", dp=2, tp=4, sp=False, dropout=0.0,
                                           microbatches=1, vocab=250)
    # The tied embedding and LM head whole on every tp rank
    # (--vocab-parallel=false), with microbatches: each microbatch's head
    # GEMM and then its embedding scatter add into the gradient's sum
    # (rt-accumulate-weight-grads).
    cases["gpt2-dp1-tp2-whole-vocab-mb2"] = dict(model="gpt2", dp=1, tp=2, sp=False,
                                                 dropout=0.0, microbatches=2,
                                                 vocab_parallel=False)
    # A tied table with microbatches on one stage, its vocabulary (250)
    # none of the other sizes: each microbatch's head GEMM and embedding
    # scatter add into the gradient's sum, which dp then all-reduces.
    cases["gpt2-vocab250-dp2-tp1-mb2"] = dict(model="gpt2", dp=2, tp=1, sp=False,
                                              dropout=0.0, microbatches=2, vocab=250)
    # --target cuda pads the vocabulary (250) to a multiple of 64 rows, per
    # tp block where it is split: to 256 on one rank and over dp (the tied
    # table's padding rows beside dropout's masks), to 256 = 2 x 128 over
    # tp=2; the gradients, checkpoints and loss are the unpadded run's.
    cases["gpt2-vocab250-one-cuda"] = dict(model="gpt2", dp=1, tp=1, sp=False,
                                           dropout=0.0, microbatches=1, vocab=250,
                                           target="cuda")
    cases["gpt2-vocab250-dp2-tp1-cuda-dropout"] = dict(model="gpt2", dp=2, tp=1, sp=False,
                                                       dropout=0.1, microbatches=1,
                                                       vocab=250, target="cuda")
    cases["llama-vocab250-dp1-tp2-sp-cuda"] = dict(model="llama", dp=1, tp=2, sp=True,
                                                   dropout=0.0, microbatches=1, vocab=250,
                                                   target="cuda")
    # Gradients reduced in bf16 (--grad-reduce-dtype bf16): one microbatch
    # (the reductions issued right after each gradient's last kernel) and
    # two (functions run by actions: the casts join the epilogue).
    cases["gpt2-dp2-tp1-bf16-reduce"] = dict(model="gpt2", dp=2, tp=1, sp=False,
                                             dropout=0.0, microbatches=1,
                                             grad_reduce="bf16")
    cases["llama-dp2-tp2-mb2-bf16-reduce"] = dict(model="llama", dp=2, tp=2, sp=False,
                                                  dropout=0.0, microbatches=2,
                                                  grad_reduce="bf16")
    return cases


# A gradient a + b reduced in bf16: each rank's partial is rounded to bf16
# (relative 2^-9) and so is the sum, so the error is at most
# 2^-9 (|a| + |b| + |a + b|) element by element, norm-wise 2^-9 (c + 1) with
# c = || |a| + |b| || / ||a + b||, which the halves of one batch keep below 3:
# 2^-7. (The run measures about 1.5 * 2^-9.)
BF16_REDUCTION_TOLERANCE = 2.0 ** -7


CASES = make_cases()

STEP_LINE = re.compile(r"^step (\d+) loss (\S+) grad_norm (\S+) lr (\S+)", re.MULTILINE)


def main():
    if not shutil.which("mpiexec"):
        print("mpiexec is not on PATH: skipped")
        return 77
    case = e2e_support.Case(__doc__.split("\n")[0], CASES)
    e2e_support.private_mpi_session_dir()
    spec = CASES[case.name]
    config_path = os.path.join(case.src_root, MODELS[spec["model"]])
    work, tool = case.work, case.tool
    if "vocab" in spec:
        with open(config_path) as f:
            config_json = json.load(f)
        config_json["vocab_size"] = spec["vocab"]
        config_path = os.path.join(work, "config.json")
        with open(config_path, "w") as f:
            json.dump(config_json, f)
    config = tpc_torch.load_config(config_path)
    ranks = spec["dp"] * spec["tp"]

    model_mlir = os.path.join(work, "model.mlir")
    run([tool("tpc-import"), config_path, "-o", model_mlir, "--batch", str(BATCH),
         "--seq", str(SEQ), "--dropout", repr(spec["dropout"])])
    train = ["--train", "--optimizer", "adamw", "--lr", "1e-3",
             "--microbatches", str(spec["microbatches"])]
    mesh = ["--mesh", "dp=%d,tp=%d" % (spec["dp"], spec["tp"])]
    if "grad_reduce" in spec:
        mesh += ["--grad-reduce-dtype", spec["grad_reduce"]]
    if not spec.get("vocab_parallel", True):
        mesh.append("--vocab-parallel=false")
    if spec["sp"]:
        mesh.append("--sequence-parallel")
    if "target" in spec:
        mesh += ["--target", spec["target"]]
    single_tpcx = os.path.join(work, "single.tpcx")
    dist_tpcx = os.path.join(work, "dist.tpcx")
    run([tool("tpc-compile"), model_mlir, "-o", single_tpcx] + train)
    run([tool("tpc-compile"), model_mlir, "-o", dist_tpcx] + train + mesh)

    weights = tpc_torch.random_weights(config, seed=4321)
    weights_path = os.path.join(work, "weights.safetensors")
    tpc_torch.write_safetensors(weights_path, weights)
    batch = tpc_torch.random_batch(config, BATCH, SEQ, seed=7)
    batch["labels"] = tpc_torch.uneven_labels(batch["labels"], 2 * spec["dp"])
    inputs_path = os.path.join(work, "batch.safetensors")
    tpc_torch.write_safetensors(inputs_path, batch)

    failures = 0

    def report(ok, message):
        nonlocal failures
        print(("ok " if ok else "FAIL ") + message)
        failures += 0 if ok else 1

    def fail(message):
        report(False, message)

    def one_step(tpcx, label, step, start, extra):
        """Runs step `step` alone from `start`; returns the printed lines,
        the dumped outputs and gradients."""
        prefix = os.path.join(work, "%s.%d" % (label, step))
        stdout = run([tool("tpc-run"), tpcx, "--inputs", inputs_path, "--steps", "1",
                      "--dump-grads", prefix + ".grads", "--dump-outputs", prefix + ".out",
                      "--save-checkpoint", prefix + ".ckpt.safetensors"] + start + extra)
        printed = STEP_LINE.findall(stdout)
        if len(printed) != 1 or int(printed[0][0]) != step:
            fail("%s: tpc-run printed %s, expected one line 'step %d loss ..'"
                 % (label, printed, step))
            sys.exit(1)
        return (stdout, tpc_torch.read_safetensors(prefix + ".out"),
                tpc_torch.read_safetensors(prefix + ".grads"))

    names = sorted(weights)
    optimizer = dict(optimizer="adamw", betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                     grad_clip=0.0, decay_exclude=())
    before = dict(weights)
    before.update(step_check.zero_state(weights, "adamw"))
    first_loss = first_exact_loss = None
    for step in range(1, STEPS + 1):
        start = (["--weights", weights_path] if step == 1 else
                 ["--load-checkpoint", os.path.join(work, "dist.%d.ckpt.safetensors" % (step - 1))])
        dist_out, dist_outputs, dist_grads = one_step(dist_tpcx, "dist", step, start,
                                                      ["--ranks", str(ranks)])
        single_out, single_outputs, single_grads = one_step(single_tpcx, "single", step,
                                                            start, [])
        if step == 1:
            first_loss = float(dist_outputs["loss"])
            e2e_support.check_rank_peaks(dist_out, ranks, report)
            failures += e2e_support.check_peak(single_out)

        # The float32 yardstick at the mesh's parameters (dropout 0: torch
        # draws no tpc masks; dropout changes no sum's length).
        float32_errors, exact = tolerances.yardstick(config, {n: before[n] for n in names},
                                                     batch, gradients=True)
        if step == 1:
            first_exact_loss = float(exact["loss"])  # dropout 0, the weights
        loss_tolerance = tolerances.tolerance(float32_errors["loss"])
        grad_tolerance = tolerances.tolerance(float32_errors["grads"])
        if spec.get("grad_reduce") == "bf16":
            grad_tolerance = max(grad_tolerance, BF16_REDUCTION_TOLERANCE)
        for what in ("loss", "grad_norm"):
            a, b = float(dist_outputs[what]), float(single_outputs[what])
            error = abs(a - b) / abs(b)
            tolerance = 2 * (loss_tolerance if what == "loss" else grad_tolerance)
            report(error <= tolerance, "step %d %s: mesh %.9g single %.9g from the same state "
                   "(relative error %.2e, tolerance %.2e)" % (step, what, a, b, error,
                                                             tolerance))
        worst = e2e_support.compare_gradients(dist_grads, single_grads,
                                              "the single-device run (step %d)" % step,
                                              2 * grad_tolerance, report)
        if spec.get("grad_reduce") == "bf16" and worst < 1e-4:
            fail("step %d: the gradients equal the fp32 reduction's (worst relative "
                 "error %.2e): nothing was reduced in bf16" % (step, worst))
        if spec["dropout"] == 0:
            e2e_support.compare_gradients(dist_grads, exact["grads"],
                                          "PyTorch (step %d)" % step, grad_tolerance, report)
            loss = float(exact["loss"])
            error = abs(float(dist_outputs["loss"]) - loss) / abs(loss)
            report(error <= loss_tolerance, "step %d loss vs PyTorch: %.9g expected %.9g "
                   "(relative error %.2e, tolerance %.2e)"
                   % (step, float(dist_outputs["loss"]), loss, error, loss_tolerance))
        after = tpc_torch.read_safetensors(os.path.join(work, "dist.%d.ckpt.safetensors" % step))
        step_check.check_update(names, before, dist_grads, after, step, optimizer, 1e-3,
                                report)
        before = after

    if spec["dropout"] > 0:
        error = abs(first_loss - first_exact_loss) / abs(first_exact_loss)
        print("first loss with dropout %.6f, without %.6f (relative difference %.2e)"
              % (first_loss, first_exact_loss, error))
        if error < 1e-3:
            fail("the dropout run's loss equals the dropout-free one: no mask was drawn")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
