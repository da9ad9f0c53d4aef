"""One optimizer step of tpc-run, checked from the state tpc itself had.

Why not a free-running trajectory: ten float32 steps compared with ten
float64 steps amplify the first step's rounding by whatever the optimization
does (SGD at lr 0.05 with the loss falling from 12.6 to 0.3 took a 1e-7
difference past 1e-4 on another CPU), so any fixed trajectory tolerance is
either loose or machine-dependent. Instead each step k is run alone
(`tpc-run --load-checkpoint c(k-1) --steps 1`) and checked in two parts, each
against what float32 can promise for that part, from the same inputs:

  1. forward and backward: the loss and the gradients tpc computes at its own
     parameters p(k-1) against float64 autograd at the same p(k-1), within
     what float32 promises for them (tolerances.py);
  2. the optimizer: tpc's p(k) and optimizer state against the same update
     formula evaluated in float64 from p(k-1), the state of step k-1 and tpc's
     own gradients, within the first-order bound on the rounding of evaluating
     that formula in float32 (`Bounded`: each operation rounds once, by at
     most u = 2^-24 of its result, and errors propagate through each
     operation's derivative). The formula is itself checked against
     torch.optim in float64 on the same inputs, so it is torch's, not a copy of
     the runtime's.

No check depends on how earlier steps' rounding grew, so the same tolerances
hold on every CPU and BLAS kernel, and a wrong update (a coefficient off by
1e-3, a perturbed element) is still caught at the step where it happens.
"""

import math

import torch

import tpc_torch
from tolerances import U32

# Two float64 evaluations of the same update (the formula below and
# torch.optim): ~20 operations of unit roundoff 1.1e-16, with cancellation in
# p - lr * update amplifying by at most |p| / |p - lr * update| (< 1e3 here).
FLOAT64_AGREEMENT = 1e-10


class Bounded:
    """A float64 value with an elementwise bound on how far the float32
    evaluation of the same expression can be from it (first order in u)."""

    def __init__(self, value, error=None):
        self.value = value
        self.error = torch.zeros_like(value) if error is None else error

    @staticmethod
    def exact(tensor):
        """A float32 input read from a file: exactly representable."""
        return Bounded(tensor.double())

    @staticmethod
    def f32_scalar(x, extra_ulps=0):
        """A scalar the runtime computes in double and rounds to float once:
        off by exactly that rounding, plus extra_ulps * u for float
        operations that produced it (the learning rate is a float output of
        the schedule kernel: 1)."""
        value = torch.tensor(float(x), dtype=torch.float64)
        rounding = (value.float().double() - value).abs()
        return Bounded(value, rounding + extra_ulps * U32 * value.abs())

    def _rounded(self, value, error):
        # Round to nearest: within u of the magnitude, or half the spacing of
        # float32's subnormals (2^-150) below 2^-126.
        return Bounded(value, error + torch.clamp(U32 * value.abs(), min=2.0 ** -150))

    def __add__(self, other):
        return self._rounded(self.value + other.value, self.error + other.error)

    def __mul__(self, other):
        return self._rounded(self.value * other.value,
                             self.value.abs() * other.error + other.value.abs() * self.error)

    def __truediv__(self, other):
        value = self.value / other.value
        return self._rounded(value, (self.error + value.abs() * other.error)
                             / other.value.abs())

    def sqrt(self):
        value = self.value.sqrt()
        # sqrt(v + e) - sqrt(v) <= min(e / (2 sqrt v), sqrt e).
        propagated = torch.minimum(self.error.sqrt(),
                                   self.error / (2 * value).clamp_min(1e-300))
        return self._rounded(value, propagated)


def _scaled_gradient(grad, scale):
    g = Bounded.exact(grad)
    return g if scale is None else g * scale


def adamw_update(param, grad, exp_avg, exp_avg_sq, step, lr, scale, beta1, beta2, eps,
                 weight_decay):
    """torch.optim.AdamW's single-tensor step, in the operation order of
    runtime/cpu/CpuOptimizerKernels.cpp (the scalars computed in double and
    rounded to float once). Returns Bounded (param, exp_avg, exp_avg_sq)."""
    g = _scaled_gradient(grad, scale)
    p = Bounded.exact(param) * Bounded.f32_scalar(1.0 - lr * weight_decay,
                                                    extra_ulps=lr * weight_decay)
    m = (Bounded.exact(exp_avg) * Bounded.f32_scalar(beta1)
         + Bounded.f32_scalar(1.0 - beta1) * g)
    v = (Bounded.exact(exp_avg_sq) * Bounded.f32_scalar(beta2)
         + Bounded.f32_scalar(1.0 - beta2) * g * g)
    correction1 = 1.0 - beta1 ** step
    correction2 = 1.0 - beta2 ** step
    denom = v.sqrt() / Bounded.f32_scalar(math.sqrt(correction2)) + Bounded.f32_scalar(eps)
    new_param = p + Bounded.f32_scalar(-(lr / correction1), extra_ulps=1) * m / denom
    return new_param, m, v


def sgd_update(param, grad, momentum_buffer, lr, scale, momentum, weight_decay=0.0):
    """torch.optim.SGD's step (dampening 0, not Nesterov), in the runtime's
    operation order. Returns Bounded (param, momentum_buffer)."""
    d = _scaled_gradient(grad, scale)
    if weight_decay:
        d = d + Bounded.f32_scalar(weight_decay) * Bounded.exact(param)
    buf = Bounded.exact(momentum_buffer) * Bounded.f32_scalar(momentum) + d
    new_param = Bounded.exact(param) + Bounded.f32_scalar(-lr, extra_ulps=1) * buf
    return new_param, buf


def torch_optim_step(names, params, grads, states, step, settings, lr, scale):
    """The same step through torch.optim in float64 (the independent
    reference the formula above must agree with). Returns {name: tensor} for
    the params and the states, named as in a checkpoint."""
    tensors = {n: params[n].double().clone().requires_grad_(True) for n in names}
    for n in names:
        tensors[n].grad = grads[n].double() * (1.0 if scale is None else scale)
    if settings["optimizer"] == "adamw":
        excluded = set(n for n in names if any(p in n for p in settings["decay_exclude"]))
        groups = [{"params": [tensors[n] for n in names if n not in excluded]},
                  {"params": [tensors[n] for n in names if n in excluded],
                   "weight_decay": 0.0}]
        opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr,
                                betas=settings["betas"], eps=settings["eps"],
                                weight_decay=settings["weight_decay"])
        for n in names:
            opt.state[tensors[n]] = {
                "step": torch.tensor(float(step - 1)),
                "exp_avg": states[n + ".exp_avg"].double().clone(),
                "exp_avg_sq": states[n + ".exp_avg_sq"].double().clone()}
    else:
        opt = torch.optim.SGD([tensors[n] for n in names], lr=lr,
                              momentum=settings["momentum"])
        for n in names:
            opt.state[tensors[n]] = {"momentum_buffer": states[n + ".momentum"].double().clone()}
    opt.step()
    result = {}
    for n in names:
        result[n] = tensors[n].detach()
        for key, value in opt.state[tensors[n]].items():
            if key == "exp_avg" or key == "exp_avg_sq":
                result[n + "." + key] = value
            elif key == "momentum_buffer":
                result[n + ".momentum"] = value
    return result


def zero_state(weights, optimizer):
    """The optimizer state before the first step, named as in a checkpoint."""
    suffixes = (".exp_avg", ".exp_avg_sq") if optimizer == "adamw" else (".momentum",)
    return {n + s: torch.zeros_like(t, dtype=torch.float32)
            for n, t in weights.items() for s in suffixes}


def clip_scale(grads, grad_clip):
    """torch.nn.utils.clip_grad_norm_'s coefficient from tpc's own gradients
    as a Bounded scalar, or None without clipping. The runtime sums squares
    in double and rounds the norm and the coefficient to float: within 4 u of
    the float64 value computed here."""
    if grad_clip <= 0:
        return None, 1.0
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads.values()))
    coefficient = min(1.0, grad_clip / (norm + 1e-6))
    if coefficient == 1.0:
        return None, 1.0
    return Bounded.f32_scalar(coefficient, extra_ulps=3), coefficient


def check_update(names, before, grads, after, step, settings, lr, report):
    """Checks tpc's checkpoint `after` of step `step` against the float64
    update of (`before`, tpc's gradients `grads`). `before` and `after` hold
    the params and states under their checkpoint names. `report(ok, message)`
    prints and counts. Returns the largest |tpc - float64| / bound seen."""
    scale, coefficient = clip_scale(grads, settings.get("grad_clip", 0.0))
    expected = {}
    for n in names:
        decay = settings.get("weight_decay", 0.0)
        if settings["optimizer"] == "adamw":
            if any(p in n for p in settings["decay_exclude"]):
                decay = 0.0
            p, m, v = adamw_update(before[n], grads[n], before[n + ".exp_avg"],
                                   before[n + ".exp_avg_sq"], step, lr, scale,
                                   settings["betas"][0], settings["betas"][1],
                                   settings["eps"], decay)
            expected.update({n: p, n + ".exp_avg": m, n + ".exp_avg_sq": v})
        else:
            p, buf = sgd_update(before[n], grads[n], before[n + ".momentum"], lr, scale,
                                settings["momentum"])
            expected.update({n: p, n + ".momentum": buf})

    reference = torch_optim_step(names, before, grads, before, step, settings, lr,
                                 None if scale is None else coefficient)
    worst_formula = 0.0
    for key, bounded in expected.items():
        worst_formula = max(worst_formula, tpc_torch.relative_error(bounded.value, reference[key]))
    report(worst_formula <= FLOAT64_AGREEMENT,
           "step %d: the update formula vs torch.optim (float64): worst relative "
           "difference %.2e (tolerance %.0e)" % (step, worst_formula, FLOAT64_AGREEMENT))

    worst, worst_key = 0.0, None
    for key, bounded in sorted(expected.items()):
        if key not in after:
            report(False, "step %d: the checkpoint has no %s" % (step, key))
            continue
        actual = after[key].double()
        if tuple(actual.shape) != tuple(bounded.value.shape):
            report(False, "step %d: %s has shape %s, expected %s"
                   % (step, key, list(actual.shape), list(bounded.value.shape)))
            continue
        difference = (actual - bounded.value).abs()
        ratio = float((difference / bounded.error.clamp_min(1e-300)).max())
        if bool((difference == 0).all()):
            ratio = 0.0
        if ratio > worst:
            worst, worst_key = ratio, key
        if ratio > 1.0:
            index = int((difference - bounded.error).argmax())
            report(False, "step %d: %s element %d is %.9g, expected %.9g (float32 bound %.2e)"
                   % (step, key, index, float(actual.view(-1)[index]),
                      float(bounded.value.view(-1)[index]),
                      float(bounded.error.view(-1)[index])))
    report(worst <= 1.0, "step %d: params and optimizer state within the float32 bound of "
           "the update (worst |tpc - float64| / bound %.3f, at %s)" % (step, worst, worst_key))
    return worst

