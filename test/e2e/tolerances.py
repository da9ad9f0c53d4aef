"""Where the end-to-end checks' tolerances come from: what float32 can
promise for the computation compared (docs/testing/tolerances.md).

tpc computes in float32 (unit roundoff u = 2^-24: round-to-nearest changes a
result by at most u of its magnitude); the references compute in float64.
How far a float32 evaluation of a whole model lands from the exact result
depends on the model, the shapes, the weights (a gradient summed from terms
that cancel loses more than a logit) and the order of every sum, so no one
number holds for every check. The yardstick here is measured instead: the
same computation in torch float32 (another implementation, other summation
orders) on the same inputs, against the same float64 reference. A correct
float32 implementation lands at the same distance up to the spread of
rounding realizations:

    tolerance = SPREAD * max(torch float32's error, FLOOR)

SPREAD = 8: a factor 2 for the order of the sums (a sequential sum of n terms
accumulates ~sqrt(n) u, a blocked or pairwise one ~log2(n) u; for the
reductions here, n <= 256, the ratio is at most 16 / 8 = 2), times 4 for the
realization: two correct float32 runs with different kernels differ in their
error by the luck of their roundings (measured tpc / torch-float32 ratios:
0.9 to 2.1 over every step, case and OpenBLAS core type;
docs/testing/tolerances.md). FLOOR = 4 u: a scalar that torch happens to
round well (its error can be 0) still gets the few roundings of a mean or a
log-sum-exp.

Mixed precision (tpc-import --dtype bf16: bf16 activations and matmul
inputs, float32 accumulation, master weights and optimizer state) is measured
against torch computing the same model wholly in bf16 (u = 2^-8), with
SPREAD_BF16 = 2: tpc rounds to bf16 at no more places than plain bf16 does,
and its float32 accumulation makes its error independent of the BLAS kernel
(measured tpc / torch-bf16 ratios: 0.6 to 1.3 over the ten steps of
e2e.train.gpt2-bf16-adamw). A wrong term or a lost scale is off by far more.
"""

import torch

import tpc_torch

U32 = 2.0 ** -24
U_BF16 = 2.0 ** -8
SPREAD = 8.0
SPREAD_BF16 = 2.0
FLOOR = 4 * U32


def tolerance(yardstick_error, dtype=torch.float32):
    """The tolerance for a result of a model computing in `dtype` whose
    torch yardstick in that dtype is `yardstick_error` (norm-wise relative,
    against float64)."""
    if dtype == torch.bfloat16:
        return SPREAD_BF16 * max(yardstick_error, 4 * U_BF16)
    return SPREAD * max(yardstick_error, FLOOR)


def yardstick(config, weights, batch, gradients=False, dtype=torch.float32):
    """torch's norm-wise relative errors in `dtype` against float64 on the
    same weights and batch: {"loss": e, "logits": e[, "grads": worst over the
    parameters]}, and the float64 results {"loss", "logits"[, "grads"]}."""
    results = {}
    for dtype in (torch.float64, dtype):
        params = {name: t.detach().to(dtype).requires_grad_(gradients)
                  for name, t in weights.items()}
        with torch.set_grad_enabled(gradients):
            logits = tpc_torch.forward(config, params, batch["input_ids"])
            loss = tpc_torch.loss_of(logits, batch["labels"])
            if gradients:
                loss.backward()
        results[dtype] = dict(loss=loss.detach(), logits=logits.detach())
        if gradients:
            results[dtype]["grads"] = {name: p.grad for name, p in params.items()}
    exact, single = results[torch.float64], results[dtype]
    errors = {key: tpc_torch.relative_error(single[key], exact[key])
              for key in ("loss", "logits")}
    if gradients:
        errors["grads"] = max(tpc_torch.relative_error(single["grads"][n].double(),
                                                       exact["grads"][n])
                              for n in exact["grads"])
    return errors, exact
