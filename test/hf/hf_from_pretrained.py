#!/usr/bin/env python3
"""tpc's checkpoint back into Hugging Face: `from_pretrained` of what tpc saved.

`tpc-run --save-checkpoint DIR` writes a Hugging Face model directory
(config.json, model.safetensors or its shards and index) with tpc's training
state beside it (training_state.safetensors). While `tpc-run --help` does not
say that --save-checkpoint writes a directory (an older tpc-run, whose
checkpoint is one tpc file that from_pretrained cannot read), this test
prints why and exits 77 (reported skipped, never passed).

A tiny seeded model of the family written by `save_pretrained` is trained 3
AdamW steps (lr 1e-3, dropout 0) by tpc-run (on one device, or with
`--mesh` on that mesh's ranks), which saves its checkpoint directory (with
`--shard-bytes B`, sharded above B bytes through
TPCRT_CHECKPOINT_SHARD_BYTES); `AutoModelForCausalLM.from_pretrained` of
that directory must give the trained model:

  - the directory holds config.json, equal to the model's own but for the
    dropout rates tpc-import sets, and its weights (model.safetensors, or
    shards and their index when sharded);
  - the training state is a safetensors file that `safetensors.torch`
    reads into torch (no U64): the step, an exp_avg and exp_avg_sq for
    every parameter, the seeds in its metadata;
  - from_pretrained finds every parameter (a tied lm_head from the
    embedding), every parameter changed by training (none is the initial
    one);
  - a forward-only executable run with `--weights` from the checkpoint
    directory gives the loss and logits of the loaded HF model: float64
    within rule 1 of docs/testing/tolerances.md, HF float32 within 2 x rule 1
    (hf_support.py);
  - the loaded model's loss is below the first step's (training worked).

    hf_from_pretrained.py --bin-dir build/bin --work-dir /tmp/x --family llama \
        [--mesh tp=2] [--shard-bytes 20000]
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_support as hf  # noqa: E402  (exits 77 without torch/transformers)
from hf_support import e2e_support, tpc_torch, torch, transformers  # noqa: E402
import safetensors  # noqa: E402  (transformers depends on it)
import safetensors.torch  # noqa: E402

STEPS = 3
SEED = 31


# Config keys tpc-import rewrites from --dropout (the model's own may differ).
DROPOUT_KEYS = {"attention_dropout", "hidden_dropout", "attn_pdrop", "embd_pdrop",
                "resid_pdrop", "summary_first_dropout", "dropout"}


def extra_args(parser):
    parser.add_argument("--mesh", help="train on this mesh (tpc-compile --mesh), "
                        "on its ranks (tpc-run --ranks)")
    parser.add_argument("--shard-bytes", type=int,
                        help="shard the checkpoint's weights above this many bytes "
                        "(TPCRT_CHECKPOINT_SHARD_BYTES)")


def mesh_ranks(mesh):
    ranks = 1
    for axis in mesh.split(","):
        ranks *= int(axis.split("=")[1])
    return ranks


def check_directory(checkpoint_dir, model_dir, model, sharded, report):
    """The files of the checkpoint directory: config.json, the weights, and
    the training state read by safetensors into torch."""
    files = sorted(os.listdir(checkpoint_dir))
    weights = [f for f in files if re.fullmatch(r"model-\d{5}-of-\d{5}\.safetensors", f)]
    if sharded:
        report("model.safetensors.index.json" in files and len(weights) > 1
               and "model.safetensors" not in files,
               "the weights are sharded: %s" % ", ".join(files))
        index = json.load(open(os.path.join(checkpoint_dir, "model.safetensors.index.json")))
        names = set(index["weight_map"])
        total = sum(t.numel() * t.element_size() for t in
                    (safetensors.torch.load_file(os.path.join(checkpoint_dir, f))
                     for f in weights) for t in t.values())
        report(index["metadata"]["total_size"] == total,
               "the index's total_size %s is the shards' %d bytes"
               % (index["metadata"]["total_size"], total))
    else:
        report("model.safetensors" in files and not weights
               and "model.safetensors.index.json" not in files,
               "the weights are one model.safetensors: %s" % ", ".join(files))
        weights = ["model.safetensors"]
        names = set(safetensors.torch.load_file(
            os.path.join(checkpoint_dir, "model.safetensors")))
    metadata = {}
    for f in weights:
        with safetensors.safe_open(os.path.join(checkpoint_dir, f), framework="pt") as st:
            metadata[f] = st.metadata()
    report(all(m == {"format": "pt"} for m in metadata.values()),
           "the weights' metadata is {'format': 'pt'}%s" % (
               "" if all(m == {"format": "pt"} for m in metadata.values())
               else ": %s" % metadata))
    params = hf.parameters(model)
    report(names == set(params), "the weights are the model's parameters%s"
           % ("" if names == set(params) else
              " (extra: %s; missing: %s)" % (sorted(names - set(params)),
                                             sorted(set(params) - names))))

    if not os.path.exists(os.path.join(checkpoint_dir, "config.json")):
        report(False, "the directory has no config.json")
        return
    ours = json.load(open(os.path.join(checkpoint_dir, "config.json")))
    theirs = json.load(open(os.path.join(model_dir, "config.json")))
    differ = sorted(k for k in set(ours) | set(theirs) if k not in DROPOUT_KEYS
                    and ours.get(k, "<none>") != theirs.get(k, "<none>"))
    report(not differ, "config.json is the model's own%s" % (
        "" if not differ else " but for " + ", ".join(
            "%s: %s, not %s" % (k, ours.get(k, "<none>"), theirs.get(k, "<none>"))
            for k in differ)))

    state_path = os.path.join(checkpoint_dir, "training_state.safetensors")
    state = safetensors.torch.load_file(state_path)
    with safetensors.safe_open(state_path, framework="pt") as st:
        metadata = st.metadata()
    report(int(state["step"]) == STEPS and state["step"].dtype == torch.int64,
           "training_state.safetensors: step %s (%s), torch %s" % (
               int(state["step"]), state["step"].dtype, torch.__version__))
    wanted = {"%s.%s" % (n, kind): tuple(p.shape) for n, p in params.items()
              for kind in ("exp_avg", "exp_avg_sq")}
    have = {n: tuple(t.shape) for n, t in state.items() if t.dtype == torch.float32}
    report(have == wanted, "training_state.safetensors: exp_avg and exp_avg_sq of every "
           "parameter in its shape, float32")
    report(all(metadata.get(k, "").isdigit() for k in ("random.seed", "data.seed")),
           "training_state.safetensors: the seeds in its metadata (%s)" % metadata)


def main():
    args = hf.parse_args(__doc__.split("\n")[0], extra_args)
    tools = hf.Tools(args.bin_dir)
    if not tools.checkpoint_directories():
        print("skipped: tpc-run --help does not say that --save-checkpoint writes a "
              "directory; its checkpoint is one tpc file that from_pretrained cannot "
              "read (waiting for the checkpoint format change). --save-checkpoint "
              "says:\n%s" % tools.flag_help("--save-checkpoint"))
        return hf.SKIP

    ranks = mesh_ranks(args.mesh) if args.mesh else 1
    if ranks > 1 and not shutil.which("mpiexec"):
        print("skipped: no mpiexec on PATH for --mesh %s" % args.mesh)
        return hf.SKIP
    work = os.path.join(args.work_dir, "%s-from-pretrained%s%s" % (
        args.family, "-" + args.mesh.replace("=", "").replace(",", "-") if args.mesh else "",
        "-sharded" if args.shard_bytes else ""))
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
               "adamw", "--lr", "1e-3"] + (["--mesh", args.mesh] if args.mesh else []))
    tools.run(["tpc-compile", forward_mlir, "-o", forward_tpcx])

    ids, labels = hf.make_batch(model.config.vocab_size, seed=SEED + 100)
    unshifted = tools.unshifted_labels()
    batch_path = os.path.join(work, "batch.safetensors")
    tpc_torch.write_safetensors(batch_path, hf.tpc_batch(ids, labels, unshifted))

    if args.shard_bytes:
        os.environ["TPCRT_CHECKPOINT_SHARD_BYTES"] = str(args.shard_bytes)
    shutil.rmtree(checkpoint_dir, ignore_errors=True)
    stdout = tools.run(["tpc-run", train_tpcx] + tools.weights_args(model_dir)
                       + ["--inputs", batch_path, "--steps", str(STEPS),
                          "--save-checkpoint", checkpoint_dir] + hf.label_args(unshifted)
                       + (["--ranks", str(ranks)] if ranks > 1 else []))
    os.environ.pop("TPCRT_CHECKPOINT_SHARD_BYTES", None)
    first = re.search(r"^step 1 loss (\S+)", stdout, re.MULTILINE)
    if not first or not os.path.isdir(checkpoint_dir):
        report(False, "tpc-run printed no step 1 loss, or wrote no directory %s"
               % checkpoint_dir)
        return 1
    check_directory(checkpoint_dir, model_dir, model, bool(args.shard_bytes), report)

    print("from_pretrained(%s)" % checkpoint_dir)
    trained, info = transformers.AutoModelForCausalLM.from_pretrained(
        checkpoint_dir, torch_dtype=torch.float32, attn_implementation="eager",
        output_loading_info=True)
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
    # The training executable resumed from the directory: its next step's
    # loss (computed before the update, without dropout) is the same
    # forward pass, printed with 6 decimals.
    stdout = tools.run(["tpc-run", train_tpcx, "--load-checkpoint", checkpoint_dir,
                        "--inputs", batch_path, "--steps", "1"] + hf.label_args(unshifted)
                       + (["--ranks", str(ranks)] if ranks > 1 else []))
    resumed = re.search(r"^step %d loss (\S+)" % (STEPS + 1), stdout, re.MULTILINE)
    hf_loss = float(ref["single"]["loss"])
    report(resumed is not None and abs(float(resumed.group(1)) - hf_loss)
           <= 5e-7 + 2 * ref["tol"]["loss"] * abs(hf_loss),
           "--load-checkpoint: step %d's loss %s is HF's %.6f" % (
               STEPS + 1, resumed.group(1) if resumed else "(none)", hf_loss))
    report(float(ref["single"]["loss"]) < float(first.group(1)),
           "the trained model's loss %.6f is below step 1's %s"
           % (float(ref["single"]["loss"]), first.group(1)))
    worst.print()
    return report.status()


if __name__ == "__main__":
    sys.exit(main())
