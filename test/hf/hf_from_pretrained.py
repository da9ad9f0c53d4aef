#!/usr/bin/env python3
"""tpc's checkpoint back into Hugging Face: `from_pretrained` of what tpc saved.

Waits for a checkpoint format change: today `tpc-run --save-checkpoint C`
writes one tpc file (params, optimizer state, step, data positions), which
`from_pretrained` cannot read. Until `tpc-run --help` says that
--save-checkpoint writes a directory, this test prints why and exits 77
(reported skipped, never passed).

Once it does: a tiny seeded Llama-family model written by `save_pretrained`
is trained 3 AdamW steps (lr 1e-3, dropout 0) by tpc-run, which saves its
checkpoint directory; `AutoModelForCausalLM.from_pretrained` of that
directory (with the original config if the directory has no config.json)
must give the trained parameters:

  - every parameter changed by training (none is the initial one);
  - a forward-only executable run with `--weights` from the checkpoint
    directory gives the loss and logits of the loaded HF model: float64
    within rule 1 of docs/testing/tolerances.md, HF float32 within 2 x rule 1
    (hf_support.py);
  - the loaded model's loss is below the first step's (training worked).

    hf_from_pretrained.py --bin-dir build/bin --work-dir /tmp/x --family llama
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_support as hf  # noqa: E402  (exits 77 without torch/transformers)
from hf_support import e2e_support, tpc_torch, torch, transformers  # noqa: E402

STEPS = 3
SEED = 31


def main():
    args = hf.parse_args(__doc__.split("\n")[0])
    tools = hf.Tools(args.bin_dir)
    if not tools.checkpoint_directories():
        print("skipped: tpc-run --help does not say that --save-checkpoint writes a "
              "directory; its checkpoint is one tpc file that from_pretrained cannot "
              "read (waiting for the checkpoint format change). --save-checkpoint "
              "says:\n%s" % tools.flag_help("--save-checkpoint"))
        return hf.SKIP

    work = os.path.join(args.work_dir, "%s-from-pretrained" % args.family)
    model_dir = os.path.join(work, "hf")
    checkpoint_dir = os.path.join(work, "trained")
    os.makedirs(model_dir, exist_ok=True)
    report, worst = hf.Report(), hf.Worst()

    model = hf.build_and_save(args.family, model_dir, SEED)
    initial = {n: p.detach().clone() for n, p in hf.parameters(model).items()}
    config_path = os.path.join(model_dir, "config.json")
    common = ["--batch", str(hf.BATCH), "--seq", str(hf.SEQ), "--dropout", "0"]
    train_mlir = os.path.join(work, "train.mlir")
    forward_mlir = os.path.join(work, "forward.mlir")
    tools.tpc_import(config_path, train_mlir, common, args.family)
    tools.tpc_import(config_path, forward_mlir, common + ["--output", "logits"],
                     args.family)
    train_tpcx = os.path.join(work, "train.tpcx")
    forward_tpcx = os.path.join(work, "forward.tpcx")
    tools.run(["tpc-compile", train_mlir, "-o", train_tpcx, "--train", "--optimizer",
               "adamw", "--lr", "1e-3"])
    tools.run(["tpc-compile", forward_mlir, "-o", forward_tpcx])

    ids, labels = hf.make_batch(model.config.vocab_size, seed=SEED + 100)
    unshifted = tools.unshifted_labels()
    batch_path = os.path.join(work, "batch.safetensors")
    tpc_torch.write_safetensors(batch_path, hf.tpc_batch(ids, labels, unshifted))

    stdout = tools.run(["tpc-run", train_tpcx] + tools.weights_args(model_dir)
                       + ["--inputs", batch_path, "--steps", str(STEPS),
                          "--save-checkpoint", checkpoint_dir] + hf.label_args(unshifted))
    first = re.search(r"^step 1 loss (\S+)", stdout, re.MULTILINE)
    if not first or not os.path.isdir(checkpoint_dir):
        report(False, "tpc-run printed no step 1 loss, or wrote no directory %s"
               % checkpoint_dir)
        return 1

    has_config = os.path.exists(os.path.join(checkpoint_dir, "config.json"))
    print("from_pretrained(%s)%s" % (checkpoint_dir, "" if has_config else
                                     " with the original config (none in the directory)"))
    trained, info = transformers.AutoModelForCausalLM.from_pretrained(
        checkpoint_dir, torch_dtype=torch.float32, attn_implementation="eager",
        output_loading_info=True, **({} if has_config else {"config": model.config}))
    trained.eval()
    report(not info["missing_keys"] and not info["mismatched_keys"],
           "from_pretrained found every parameter (missing: %s; mismatched: %s)"
           % (info["missing_keys"] or "none", info["mismatched_keys"] or "none"))
    report(type(trained) is type(model), "from_pretrained gave %s" % type(trained).__name__)
    unchanged = [n for n, p in hf.parameters(trained).items()
                 if n not in initial or torch.equal(p, initial[n])]
    report(not unchanged, "every parameter was trained%s"
           % ("" if not unchanged else " (unchanged or unknown: %s)" % ", ".join(unchanged)))

    outputs_path = os.path.join(work, "outputs.safetensors")
    stdout = tools.run(["tpc-run", forward_tpcx] + tools.weights_args(checkpoint_dir)
                       + ["--inputs", batch_path, "--dump-outputs", outputs_path]
                       + hf.label_args(unshifted))
    report.failures += e2e_support.check_peak(stdout)
    outputs = tpc_torch.read_safetensors(outputs_path)
    ref = hf.references(trained, ids, labels, False, report)
    hf.compare_to_references("loss", outputs["loss"], ref, "loss", report, worst)
    hf.compare_to_references("logits", outputs["logits"], ref, "logits", report, worst)
    report(float(ref["single"]["loss"]) < float(first.group(1)),
           "the trained model's loss %.6f is below step 1's %s"
           % (float(ref["single"]["loss"]), first.group(1)))
    worst.print()
    return report.status()


if __name__ == "__main__":
    sys.exit(main())
