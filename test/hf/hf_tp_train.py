#!/usr/bin/env python3
"""Hugging Face model trained under tensor parallelism: tp = 2 vs one device.

A tiny seeded Llama-family model written by `save_pretrained` is trained 3
AdamW steps (lr 1e-3, dropout 0, the same batch every step) compiled with
`--mesh tp=2` and run with `tpc-run --ranks 2`. As check_dist.py does
(docs/testing/tolerances.md, rule 2: a free-running float32 trajectory
amplifies its rounding, so no fixed trajectory tolerance is both tight and
safe), each step runs alone from the mesh's checkpoint of the step before
(a resumed run continues bit-identically, so the three runs are the mesh's
3-step trajectory), and the same step runs on one device from the same
checkpoint. At every step, from the same state:

  - the mesh's loss, grad_norm and every gradient equal the one-device
    run's within 2 x rule 1 (two float32 evaluations), rule 1 being 8 x HF
    float32's own error at the mesh's parameters (loaded into the HF model
    from the checkpoint, which holds them under their Hugging Face names);
  - the mesh's loss and gradients equal the Hugging Face model's at those
    parameters: float64 within rule 1, HF float32 within 2 x rule 1;
  - every rank's measured peak equals its planned peak (step 1).

And the loss goes down: step 1 > step 2 > step 3 (each printed before its
update), and HF's loss at the parameters after update 3 is below step 3's.

Exit status 0: equal; 1: a difference or a tool failed; 77: no mpiexec,
no transformers, or a family tpc-import does not support yet.

    hf_tp_train.py --bin-dir build/bin --work-dir /tmp/x --family llama
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_support as hf  # noqa: E402  (exits 77 without torch/transformers)
from hf_support import e2e_support, tpc_torch, torch  # noqa: E402

STEPS, TP = 3, 2
SEED = 21


def main():
    args = hf.parse_args(__doc__.split("\n")[0])
    if not shutil.which("mpiexec"):
        print("mpiexec is not on PATH: skipped")
        return hf.SKIP
    e2e_support.private_mpi_session_dir()
    work = os.path.join(args.work_dir, "%s-tp%d" % (args.family, TP))
    model_dir = os.path.join(work, "hf")
    os.makedirs(model_dir, exist_ok=True)
    tools = hf.Tools(args.bin_dir)
    report, worst = hf.Report(), hf.Worst()

    model = hf.build_and_save(args.family, model_dir, SEED)
    mlir = os.path.join(work, "model.mlir")
    tools.tpc_import(os.path.join(model_dir, "config.json"), mlir,
                     ["--batch", str(hf.BATCH), "--seq", str(hf.SEQ), "--dropout", "0"],
                     args.family)
    train = ["--train", "--optimizer", "adamw", "--lr", "1e-3"]
    single_tpcx = os.path.join(work, "single.tpcx")
    mesh_tpcx = os.path.join(work, "tp%d.tpcx" % TP)
    tools.run(["tpc-compile", mlir, "-o", single_tpcx] + train)
    tools.run(["tpc-compile", mlir, "-o", mesh_tpcx] + train + ["--mesh", "tp=%d" % TP])

    ids, labels = hf.make_batch(model.config.vocab_size, seed=SEED + 100)
    unshifted = tools.unshifted_labels()
    batch_path = os.path.join(work, "batch.safetensors")
    tpc_torch.write_safetensors(batch_path, hf.tpc_batch(ids, labels, unshifted))

    def one_step(tpcx, label, step, start, extra):
        prefix = os.path.join(work, "%s.%d" % (label, step))
        stdout = tools.run(["tpc-run", tpcx, "--inputs", batch_path, "--steps", "1",
                            "--dump-grads", prefix + ".grads", "--dump-outputs",
                            prefix + ".out", "--save-checkpoint", prefix + ".ckpt.safetensors"]
                           + start + extra + hf.label_args(unshifted))
        if "step %d loss" % step not in stdout:
            report(False, "%s: tpc-run printed no 'step %d loss ..' line" % (label, step))
            sys.exit(1)
        return (stdout, tpc_torch.read_safetensors(prefix + ".out"),
                tpc_torch.read_safetensors(prefix + ".grads"))

    params = hf.parameters(model)
    losses = []
    for step in range(1, STEPS + 1):
        start = (tools.weights_args(model_dir) if step == 1 else
                 ["--load-checkpoint", os.path.join(work, "mesh.%d.ckpt.safetensors" % (step - 1))])
        mesh_out, mesh, mesh_grads = one_step(mesh_tpcx, "mesh", step, start,
                                              ["--ranks", str(TP)])
        single_out, single, single_grads = one_step(single_tpcx, "single", step, start, [])
        if step == 1:
            e2e_support.check_rank_peaks(mesh_out, TP, report)
            report.failures += e2e_support.check_peak(single_out)
        losses.append(float(mesh["loss"]))

        # The HF model at the mesh's parameters p(step - 1).
        if step > 1:
            load_checkpoint_params(model, os.path.join(work, "mesh.%d.ckpt.safetensors" % (step - 1)))
        ref = hf.references(model, ids, labels, True, report)
        print("step %d: loss %.7f (mesh) %.7f (one device)"
              % (step, float(mesh["loss"]), float(single["loss"])))
        for key in ("loss", "grad_norm"):
            tol = 2 * ref["tol"][key]
            error = tpc_torch.relative_error(mesh[key], single[key])
            report.close(error, tol, "step %d %s: tp=%d vs one device" % (step, key, TP))
            worst.note("%s: tp=%d vs one device" % (key, TP), error, tol)
        largest = e2e_support.compare_gradients(
            mesh_grads, single_grads, "one device (step %d)" % step,
            2 * ref["tol"]["grads"], report)
        worst.note("grads: tp=%d vs one device" % TP, largest, 2 * ref["tol"]["grads"])
        hf.compare_to_references("step %d loss (tp=%d)" % (step, TP), mesh["loss"], ref,
                                 "loss", report, worst)
        hf.compare_gradients(mesh_grads, ref, report, worst, " (step %d, tp=%d)" % (step, TP))

    load_checkpoint_params(model, os.path.join(work, "mesh.%d.ckpt.safetensors" % STEPS))
    with torch.no_grad():
        final = float(model(input_ids=ids, labels=labels).loss)
    losses.append(final)
    print("losses: %s (the last: HF's, at the parameters after update %d)"
          % (" > ".join("%.6f" % v for v in losses), STEPS))
    report(all(a > b for a, b in zip(losses, losses[1:])),
           "the loss goes down at every step")
    worst.print()
    return report.status()


def load_checkpoint_params(model, path):
    """The parameters of a tpc-run checkpoint (Hugging Face names) into the
    HF model; every parameter must be there with its shape."""
    checkpoint = tpc_torch.read_safetensors(path)
    with torch.no_grad():
        for name, p in hf.parameters(model).items():
            if name not in checkpoint or tuple(checkpoint[name].shape) != tuple(p.shape):
                print("FAIL: %s: no parameter %s of shape %s" % (path, name, list(p.shape)))
                sys.exit(1)
            p.copy_(checkpoint[name])


if __name__ == "__main__":
    sys.exit(main())
