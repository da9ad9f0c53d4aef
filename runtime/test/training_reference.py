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
drawing the dropout masks from the contract's splitmix64 stream, in float64,
and compares:

- the printed loss, grad_norm and lr of every step,
- the first step's gradients (--dump-grads) per tensor, norm-wise,
- the params and optimizer state after the last step (--save-checkpoint).

Tolerances are what float32 can promise for each (docs/testing/tolerances.md):
the first step's gradients within SPREAD = 8 times torch float32's own error
on them (two correct float32 implementations differ in their error by the
order of their sums and the luck of their roundings; test/e2e/tolerances.py).
A trajectory amplifies each step's rounding by whatever the optimization
does, so its tolerance is measured on the float64 reference itself: it is
run again twice with every step's gradients perturbed (a random direction,
norm-wise as large as float32's error on the first step's gradients: an
implementation exactly as accurate as float32 allows), and each step's value
may differ from the float64 one by SPREAD times the larger of the two
perturbed runs' differences, plus the printed precision (loss: 6 decimals;
grad_norm, lr: 7 significant digits).
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


SPREAD = 8.0
U32 = 2.0 ** -24


def float32_gradient_error(d, exact):
    """torch float32's worst norm-wise error on the first step's gradients
    against `exact`, the float64 ones: what float32 promises for them."""
    weights = read_safetensors(d + "/train-weights.safetensors")
    batch = read_safetensors(d + "/train-batch.safetensors")
    ids, labels = batch["input_ids"].long(), batch["labels"].long()
    p = {n: weights[n].float().clone().requires_grad_(True) for n in NAMES}
    loss_of(p, ids, labels, 0).backward()
    return max(rel_err(p[n].grad, exact[n]) for n in NAMES)


def torch_run(d, optimizer_name, steps, noise=0.0, seed=0):
    """The float64 reference; with noise > 0 every step's gradients get a
    random perturbation of norm-wise relative size `noise` per tensor."""
    weights = read_safetensors(d + "/train-weights.safetensors")
    batch = read_safetensors(d + "/train-batch.safetensors")
    ids, labels = batch["input_ids"].long(), batch["labels"].long()
    p = {n: torch.nn.Parameter(weights[n].double().clone()) for n in NAMES}
    generator = torch.Generator().manual_seed(seed)
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
        if noise > 0:
            for n in NAMES:
                g = p[n].grad
                direction = torch.randn(g.shape, generator=generator,
                                        dtype=torch.float64)
                g.add_(direction * (noise * g.norm() / direction.norm()))
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
    float32_error = float32_gradient_error(d, grads)
    # What an implementation as accurate as float32 may do: the float64 run
    # with every step's gradients off by float32's error, twice.
    spread_history = [0.0] * steps
    spread_state = 0.0
    for seed in (1, 2):
        other, _, other_state = torch_run(d, optimizer_name, steps,
                                          noise=float32_error, seed=seed)
        for k in range(steps):
            for a, b in zip(other[k][:2], history[k][:2]):
                spread_history[k] = max(spread_history[k], abs(a - b) / abs(b))
        spread_state = max(spread_state, max(
            rel_err(other_state[n], v) for n, v in state.items()))
    grad_tolerance = SPREAD * max(float32_error, 4 * U32)
    state_tolerance = SPREAD * max(spread_state, 4 * U32)
    lines = open(f"{d}/{optimizer_name}.txt").read()
    printed = [tuple(float(v) for v in m) for m in re.findall(
        r"^step \d+ loss (\S+) grad_norm (\S+) lr (\S+) ", lines, re.M)]
    failures = []
    if len(printed) != steps:
        failures.append(f"{len(printed)} step lines, expected {steps}")
    worst = {"loss": 0.0, "grad_norm": 0.0, "lr": 0.0}
    for k, (ours, ref) in enumerate(zip(printed, history)):
        trajectory = SPREAD * max(spread_history[k], 4 * U32)
        tolerances = {"loss": trajectory + 0.5e-6 / abs(ref[0]),
                      "grad_norm": trajectory + 5e-7,
                      "lr": U32 + 5e-7}
        for name, a, b in zip(("loss", "grad_norm", "lr"), ours, ref):
            err = abs(a - b) / abs(b)
            worst[name] = max(worst[name], err / tolerances[name])
            if err > tolerances[name]:
                failures.append(f"step {k + 1} {name} {a} vs torch {b} "
                                f"(relative error {err:.2e}, tolerance "
                                f"{tolerances[name]:.2e})")
    dumped = read_safetensors(f"{d}/{optimizer_name}-grads.safetensors")
    grad_err = max(rel_err(dumped[n], grads[n]) for n in NAMES)
    if grad_err > grad_tolerance:
        failures.append(f"first-step gradients: relative error {grad_err:.3e} "
                        f"(tolerance {grad_tolerance:.2e})")
    ckpt = read_safetensors(f"{d}/{optimizer_name}-ckpt.safetensors")
    state_err = max(rel_err(ckpt[n], v) for n, v in state.items())
    if state_err > state_tolerance:
        failures.append(f"params and state after {steps} steps: relative "
                        f"error {state_err:.3e} (tolerance {state_tolerance:.2e})")
    if int(ckpt["step"].item()) != steps:
        failures.append(f"checkpoint step {ckpt['step'].item()}")
    print(f"{optimizer_name}, {steps} steps vs float64 torch: worst error / "
          f"tolerance: loss {worst['loss']:.3f} grad_norm "
          f"{worst['grad_norm']:.3f} lr {worst['lr']:.3f}; first-step grads "
          f"{grad_err:.3e} (tolerance {grad_tolerance:.2e}, torch float32 "
          f"{float32_error:.2e}); final params and state {state_err:.3e} "
          f"(tolerance {state_tolerance:.2e}); losses "
          f"{history[0][0]:.6f} -> {history[-1][0]:.6f}")
    for f in failures:
        print("FAIL: " + f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
