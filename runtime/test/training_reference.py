#!/usr/bin/python3
"""tpc-run training the tiny training model against torch.optim.

training_reference.py DIR OPTIMIZER STEPS: DIR holds the files of
tpcrt-write-fixtures (train-weights.safetensors, train-batch.safetensors) and
what

    tpc-run tiny-train.tpcx (or tiny-train-sgd.tpcx) \\
        --weights train-weights.safetensors --inputs train-batch.safetensors \\
        --steps STEPS --dump-grads <opt>-grads.safetensors \\
        --save-checkpoint <opt>-ckpt.safetensors > <opt>.txt

wrote, OPTIMIZER being adamw or sgd. Trains the same model
(TestExecutables.h, tinyTrainingModel: embedding, dropout, layer norm, an MLP,
a tied head, cross-entropy; two microbatches with unevenly ignored labels) on
the same batch with torch autograd and torch.optim.AdamW (global-norm
clipping at 1, warm-up + cosine schedule) or torch.optim.SGD (momentum 0.9),
drawing the dropout masks from the contract's splitmix64 stream, and compares:

- the printed loss, grad_norm and lr of every step (relative error 1e-4; the
  issue's tolerance for trajectories),
- the first step's gradients (--dump-grads) per tensor, norm-wise, 1e-5,
- the params and optimizer state after the last step (--save-checkpoint),
  1e-4.
"""

import math
import re
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from kernel_reference import dropout_keep  # noqa: E402
from tiny_reference import read_safetensors, rel_err  # noqa: E402

SEED, STREAM, DROPOUT = 77, 1, 0.1
NAMES = ["transformer.wte.weight", "transformer.ln_f.weight",
         "transformer.ln_f.bias", "transformer.h.0.mlp.c_fc.weight",
         "transformer.h.0.mlp.c_fc.bias", "transformer.h.0.mlp.down.weight",
         "transformer.h.0.mlp.down.bias"]
DECAY = {"transformer.wte.weight", "transformer.h.0.mlp.c_fc.weight",
         "transformer.h.0.mlp.down.weight"}


def loss_of(p, ids, labels, step_index):
    wte = p["transformer.wte.weight"]
    tok = wte[ids]
    keep = dropout_keep(SEED, STREAM, step_index, DROPOUT, 0,
                        tok.numel()).reshape(tok.shape)
    x = torch.where(keep, tok * torch.tensor(1.0 / (1.0 - DROPOUT)),
                    torch.zeros(()))
    h = torch.nn.functional.layer_norm(x, (x.shape[-1],),
                                       p["transformer.ln_f.weight"],
                                       p["transformer.ln_f.bias"], 1e-5)
    h = h @ p["transformer.h.0.mlp.c_fc.weight"] + \
        p["transformer.h.0.mlp.c_fc.bias"]
    h = torch.nn.functional.gelu(h, approximate="tanh")
    h = h @ p["transformer.h.0.mlp.down.weight"].t() + \
        p["transformer.h.0.mlp.down.bias"]
    logits = (x + h) @ wte.t()
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
        ignore_index=-100)


def torch_run(d, optimizer_name, steps):
    weights = read_safetensors(d + "/train-weights.safetensors")
    batch = read_safetensors(d + "/train-batch.safetensors")
    ids, labels = batch["input_ids"].long(), batch["labels"].long()
    p = {n: torch.nn.Parameter(weights[n].float().clone()) for n in NAMES}
    decay = [p[n] for n in NAMES if n in DECAY]
    no_decay = [p[n] for n in NAMES if n not in DECAY]
    if optimizer_name == "adamw":
        lr, max_norm = 1e-2, 1.0
        opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": 0.1},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=lr, betas=(0.9, 0.95), eps=1e-8)

        def factor(epoch):  # warm-up 2 steps, cosine to 1e-3 at step 6
            t = epoch + 1
            if t <= 2:
                return t / 2
            progress = min(1.0, (t - 2) / (6 - 2))
            return (1e-3 + (lr - 1e-3) * 0.5 *
                    (1 + math.cos(math.pi * progress))) / lr
    else:
        lr, max_norm = 0.1, float("inf")
        opt = torch.optim.SGD(
            [{"params": decay, "weight_decay": 0.01},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=lr, momentum=0.9)

        def factor(epoch):
            return 1.0
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    history, first_grads = [], None
    for step in range(steps):
        opt.zero_grad()
        loss = loss_of(p, ids, labels, step)
        loss.backward()
        if first_grads is None:
            first_grads = {n: p[n].grad.detach().clone() for n in NAMES}
        norm = torch.nn.utils.clip_grad_norm_(list(p.values()), max_norm)
        history.append((loss.item(), norm.item(),
                        opt.param_groups[0]["lr"]))
        opt.step()
        sched.step()
    state = {}
    for n in NAMES:
        state[n] = p[n].detach()
        s = opt.state[p[n]]
        if optimizer_name == "adamw":
            state[n + ".exp_avg"] = s["exp_avg"]
            state[n + ".exp_avg_sq"] = s["exp_avg_sq"]
        else:
            state[n + ".momentum"] = s["momentum_buffer"]
    return history, first_grads, state


def main():
    d, optimizer_name, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    history, grads, state = torch_run(d, optimizer_name, steps)
    lines = open(f"{d}/{optimizer_name}.txt").read()
    printed = [tuple(float(v) for v in m) for m in re.findall(
        r"^step \d+ loss (\S+) grad_norm (\S+) lr (\S+) ", lines, re.M)]
    failures = []
    if len(printed) != steps:
        failures.append(f"{len(printed)} step lines, expected {steps}")
    worst = {"loss": 0.0, "grad_norm": 0.0, "lr": 0.0}
    for k, (ours, ref) in enumerate(zip(printed, history)):
        for name, a, b in zip(("loss", "grad_norm", "lr"), ours, ref):
            err = abs(a - b) / abs(b)
            worst[name] = max(worst[name], err)
            if err > 1e-4:
                failures.append(f"step {k + 1} {name} {a} vs torch {b}")
    dumped = read_safetensors(f"{d}/{optimizer_name}-grads.safetensors")
    grad_err = max(rel_err(dumped[n], grads[n].double()) for n in NAMES)
    if grad_err > 1e-5:
        failures.append(f"first-step gradients: relative error {grad_err:.3e}")
    ckpt = read_safetensors(f"{d}/{optimizer_name}-ckpt.safetensors")
    state_err = max(rel_err(ckpt[n], v.double()) for n, v in state.items())
    if state_err > 1e-4:
        failures.append(f"params and state after {steps} steps: relative "
                        f"error {state_err:.3e}")
    if int(ckpt["step"].item()) != steps:
        failures.append(f"checkpoint step {ckpt['step'].item()}")
    print(f"{optimizer_name}, {steps} steps vs torch: worst relative error "
          f"loss {worst['loss']:.3e} grad_norm {worst['grad_norm']:.3e} "
          f"lr {worst['lr']:.3e}; first-step grads {grad_err:.3e}; "
          f"final params and state {state_err:.3e}; losses "
          f"{history[0][0]:.6f} -> {history[-1][0]:.6f}")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
