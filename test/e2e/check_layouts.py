#!/usr/bin/env python3
"""End to end: layouts that do not depend on sizes (issue 19).

Shapes the tiny models of check_dist.py never reach: a Llama whose head size
(16) differs from its head count (8), grouped-query attention with 2 or 4
kv-heads imported with --attention unfused (K and V repeated to the query
heads), fewer kv-heads than ranks (2 over 4, and multi-query attention's 1
over 2; fused and unfused: dist-replicate-kv-heads gives each rank a copy of
its query heads' kv-head), and a GPT-2 at batch 16, sequence 128, hidden 64
and 8 heads, where every activation outweighs every weight. For one named case (a model, tp,
sequence parallelism on or off) the same random weights and batch are
run for one AdamW step on one device and on tp ranks (`tpc-run --ranks tp`).
Checks, like check_dist.py:
  - the loss, grad_norm and every parameter's gradient equal the
    single-device run's, the loss and gradients float64 PyTorch autograd's,
    within what float32 promises (tolerances.py: torch float32's own error
    on the same weights and batch, times its spread; twice that between the
    two float32 runs);
  - every rank's measured peak equals its planned peak;
  - the collectives per layer are Megatron's (`dist-report-collectives` on
    the same passes): 2 all-reduces forward and 2 backward without sequence
    parallelism; 2 all-gathers and 2 reduce-scatters forward, 4 all-gathers
    and 2 reduce-scatters backward with it; no parameter all-gathered. The
    kv-heads are split (the Llama cases fail to compile otherwise: an
    unfused grouped-query Llama with head_dim != heads was refused), or,
    fewer than the ranks, replicated: the replicated K/V weights' gradients
    are reduced once per step, not per layer.
Exit status 0: equal; 1: a difference or a tool failed; 77: no torch or no
MPI launcher.

    check_layouts.py --bin-dir build/bin --src-root . --work-dir /tmp/x --case llama-kv2-unfused-tp2
"""

import json
import os
import re
import shutil
import subprocess
import sys

try:
    import torch  # noqa: F401  (tpc_torch's reference)
except ImportError:
    print("torch is not importable by %s: skipped" % sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_support  # noqa: E402
from e2e_support import run  # noqa: E402
import tolerances  # noqa: E402
import tpc_torch  # noqa: E402


LLAMA = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
         "vocab_size": 256, "hidden_size": 128, "intermediate_size": 256,
         "num_hidden_layers": 2, "num_attention_heads": 8,
         "max_position_embeddings": 128, "hidden_act": "silu",
         "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "attention_bias": False,
         "mlp_bias": False, "tie_word_embeddings": False}
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
        "activation_function": "gelu_new", "vocab_size": 256, "n_embd": 64,
        "n_head": 8, "n_layer": 2, "n_positions": 128, "n_inner": None,
        "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True}


def make_cases():
    cases = {}
    # head_dim 16 != 8 heads; kv-heads split over tp (2 kv-heads do not
    # divide over 4 ranks: 4 kv-heads there).
    for kv, tp in ((2, 2), (4, 4)):
        for sp in (False, True):
            name = "llama-kv%d-unfused-tp%d%s" % (kv, tp, "-sp" if sp else "")
            config = dict(LLAMA, num_key_value_heads=kv)
            cases[name] = dict(config=config, tp=tp, sp=sp, batch=4, seq=16)
    # Fewer kv-heads than ranks (dist-replicate-kv-heads): each rank computes
    # the kv-head its query heads read from its copy of the replicated
    # weight; 2 kv-heads over 4 ranks, and multi-query attention (1 kv-head)
    # over 2, fused and unfused.
    for kv, tp, attention in ((2, 4, "unfused"), (2, 4, "fused"), (1, 2, "fused"),
                              (1, 2, "unfused")):
        for sp in (False, True):
            name = "llama-kv%d-%s-tp%d%s" % (kv, attention, tp, "-sp" if sp else "")
            config = dict(LLAMA, num_key_value_heads=kv)
            cases[name] = dict(config=config, tp=tp, sp=sp, batch=4, seq=16,
                               attention=attention)
    # Activations larger than the weights.
    for tp in (2, 4):
        for sp in (False, True):
            name = "gpt2-b16-s128-tp%d%s" % (tp, "-sp" if sp else "")
            cases[name] = dict(config=GPT2, tp=tp, sp=sp, batch=16, seq=128)
    return cases


CASES = make_cases()

# dist-report-collectives rows of the layers: "<phase> <layer>: <kind> [tp] xN, .. bytes".
LAYER_ROW = re.compile(r"^(forward|backward) (\d+): (\w+) \[([^\]]*)\] x(\d+), \d+ bytes$",
                       re.MULTILINE)


def expected_layer_rows(layers, sp):
    per_layer = ([("forward", "all_gather", 2), ("forward", "reduce_scatter", 2),
                  ("backward", "all_gather", 4), ("backward", "reduce_scatter", 2)]
                 if sp else [("forward", "all_reduce", 2), ("backward", "all_reduce", 2)])
    return sorted((phase, layer, kind, "tp", count)
                  for layer in range(layers) for phase, kind, count in per_layer)


def check_collectives(case, model_mlir, spec, layers):
    """The per-layer collectives of the step the mesh runs; failures."""
    pipeline = [case.tool("tpc-opt"), model_mlir,
                "--dist-replicate-kv-heads=tp=%d" % spec["tp"], "--tpc-autodiff",
                "--tpc-optimizer", "--tpc-unroll-train-step"]
    step = subprocess.run(pipeline, stdout=subprocess.PIPE, text=True, check=True).stdout
    step = step.replace("\n", "\ndist.mesh @mesh axes [tp = %d]\n" % spec["tp"], 1)
    report = subprocess.run(
        [case.tool("tpc-opt"), "-", "--dist-annotate-megatron=sequence-parallel=%s"
         % ("true" if spec["sp"] else "false"), "--dist-propagate", "--dist-partition",
         "--dist-report-collectives", "-o", os.devnull],
        input=step, stdout=subprocess.PIPE, text=True, check=True).stdout
    report = report[report.index("// collectives of @train_step"):]
    print(report)
    rows = sorted((phase, int(layer), kind, axes, int(count))
                  for phase, layer, kind, axes, count in LAYER_ROW.findall(report))
    failures = 0
    if rows != expected_layer_rows(layers, spec["sp"]):
        print("FAIL collectives per layer: %s, expected %s"
              % (rows, expected_layer_rows(layers, spec["sp"])))
        failures += 1
    if "parameters all-gathered: 0\n" not in report:
        print("FAIL a parameter is all-gathered")
        failures += 1
    return failures


def main():
    if not shutil.which("mpiexec"):
        print("mpiexec is not on PATH: skipped")
        return 77
    e2e_support.private_mpi_session_dir()
    case = e2e_support.Case(__doc__.split("\n")[0], CASES)
    spec = CASES[case.name]
    work, tool = case.work, case.tool
    config_path = os.path.join(work, "config.json")
    with open(config_path, "w") as f:
        json.dump(spec["config"], f)
    config = tpc_torch.load_config(config_path)

    model_mlir = os.path.join(work, "model.mlir")
    run([tool("tpc-import"), config_path, "-o", model_mlir, "--batch", str(spec["batch"]),
         "--seq", str(spec["seq"]), "--attention", spec.get("attention", "unfused"),
         "--dropout", "0"])
    train = ["--train", "--optimizer", "adamw", "--lr", "1e-3"]
    mesh = ["--mesh", "tp=%d" % spec["tp"]] + (["--sequence-parallel"] if spec["sp"] else [])
    single_tpcx = os.path.join(work, "single.tpcx")
    dist_tpcx = os.path.join(work, "dist.tpcx")
    run([tool("tpc-compile"), model_mlir, "-o", single_tpcx] + train)
    run([tool("tpc-compile"), model_mlir, "-o", dist_tpcx] + train + mesh)
    failures = check_collectives(case, model_mlir, spec, config.layers)

    weights = tpc_torch.random_weights(config, seed=1234)
    weights_path = os.path.join(work, "weights.safetensors")
    tpc_torch.write_safetensors(weights_path, weights)
    batch = tpc_torch.random_batch(config, spec["batch"], spec["seq"], seed=5)
    inputs_path = os.path.join(work, "batch.safetensors")
    tpc_torch.write_safetensors(inputs_path, batch)

    def report(ok, message):
        nonlocal failures
        print(("ok " if ok else "FAIL ") + message)
        failures += 0 if ok else 1

    def one_step(tpcx, label, extra):
        """One step from the weights: stdout, the dumped outputs (the exact
        loss and grad_norm) and gradients."""
        prefix = os.path.join(work, label)
        stdout = run([tool("tpc-run"), tpcx, "--weights", weights_path, "--inputs",
                      inputs_path, "--steps", "1", "--dump-grads", prefix + ".grads",
                      "--dump-outputs", prefix + ".out"] + extra)
        return (stdout, tpc_torch.read_safetensors(prefix + ".out"),
                tpc_torch.read_safetensors(prefix + ".grads"))

    single_out, single_outputs, single_grads = one_step(single_tpcx, "single", [])
    dist_out, dist_outputs, dist_grads = one_step(dist_tpcx, "dist",
                                                  ["--ranks", str(spec["tp"])])
    e2e_support.check_rank_peaks(dist_out, spec["tp"], report)
    failures += e2e_support.check_peak(single_out)

    def close(what, actual, expected, tolerance):
        actual, expected = float(actual), float(expected)
        error = abs(actual - expected) / abs(expected)
        report(error <= tolerance, "%s: %.9g expected %.9g (relative error %.2e, "
               "tolerance %.2e)" % (what, actual, expected, error, tolerance))

    # docs/testing/tolerances.md, rule 1: torch float32's own error on the
    # same weights and batch gives the tolerance against float64; two float32
    # runs (mesh, one device) may differ by twice it.
    errors, exact = tolerances.yardstick(config, weights, batch, gradients=True)
    loss_tolerance = tolerances.tolerance(errors["loss"])
    grad_tolerance = tolerances.tolerance(errors["grads"])
    close("loss vs the single-device run", dist_outputs["loss"], single_outputs["loss"],
          2 * loss_tolerance)
    close("grad_norm vs the single-device run", dist_outputs["grad_norm"],
          single_outputs["grad_norm"], 2 * grad_tolerance)
    close("loss vs float64 PyTorch", dist_outputs["loss"], exact["loss"], loss_tolerance)
    e2e_support.compare_gradients(dist_grads, single_grads, "the single-device run",
                                  2 * grad_tolerance, report)
    e2e_support.compare_gradients(dist_grads, exact["grads"], "float64 PyTorch",
                                  grad_tolerance, report)
    return 1 if failures else 0

if __name__ == "__main__":
    sys.exit(main())
