#!/usr/bin/env python3
"""A float64 reference interpreter of the tpc dialect, for checking tpc-autodiff
and tpc-optimizer numerically before any backend runs their ops.

It reads a module in MLIR's generic form (tpc-opt --mlir-print-op-generic)
and evaluates its functions with torch in float64 (every float type is
float64 here: the check is about the structure of the derivative, not about
rounding). Forward ops are written with differentiable torch ops, so that
torch autograd on @forward gives the reference gradients; backward and
optimizer ops are written from the formulas of their ODS descriptions,
without autograd (only attention_grad differentiates a recomputed attention).

    tpc_reference.py grad MODULE.mlir [--seed S]
        @train_step (any number of microbatches) against autograd on @forward:
        the loss and every parameter's gradient.
    tpc_reference.py optimizer MODULE.mlir --steps K --optimizer adamw|sgd ...
        K steps of @train_step (after tpc-optimizer) against torch.optim on
        @forward.

Exit status 0 when equal (relative norm-wise error below --tolerance),
1 otherwise.
"""

import argparse
import math
import re
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)

#===----------------------------------------------------------------------===#
# Parsing the generic form
#===----------------------------------------------------------------------===#

TENSOR_RE = re.compile(r"tensor<([^>]*)>|index|i64|f32")
OP_RE = re.compile(r'^\s*(?:(?P<res>%[^=]+?) = )?"(?P<name>[\w.]+)"'
                   r'\((?P<operands>[^)]*)\)(?P<rest>.*)$')


class TensorType:
    def __init__(self, text, tensor=True):
        if not tensor:  # index, i64, f32 scalars of the driver loop
            self.shape, self.element = None, text
            return
        parts = text.split("x")
        self.shape = [int(p) for p in parts[:-1]]
        self.element = parts[-1]

    @property
    def is_float(self):
        return self.element in ("f32", "bf16", "f16")


def parse_types(text):
    return [TensorType(m.group(1)) if m.group(1) is not None
            else TensorType(m.group(0), tensor=False)
            for m in TENSOR_RE.finditer(text)]


class Op:
    def __init__(self, name, results, operands, props, result_types):
        self.name, self.results, self.operands = name, results, operands
        self.props, self.result_types = props, result_types
        self.region = None      # list of Op for scf.for / func.func
        self.block_args = []

    def float(self, key):
        m = re.search(r"(?<![\w])%s = ([-+0-9.eE]+) : f64" % key, self.props)
        return float(m.group(1)) if m else None

    def int(self, key, default=None):
        m = re.search(r"(?<![\w])%s = (-?\d+) : i64" % key, self.props)
        return int(m.group(1)) if m else default

    def unit(self, key):
        return re.search(r"(?<![\w])%s(?![\w ]*=)(?=[,}]|$)" % key,
                         self.props) is not None

    def enum(self, key):
        m = re.search(r"(?<![\w])%s = #tpc<\w+ (\w+)>" % key, self.props)
        return m.group(1) if m else None

    def array(self, key):
        m = re.search(r"(?<![\w])%s = array<i64(?:: ([-\d, ]*))?>" % key,
                      self.props)
        if not m:
            return None
        return [int(x) for x in m.group(1).split(",")] if m.group(1) else []


def split_results(text):
    if text is None:
        return []
    text = text.strip()
    m = re.fullmatch(r"(%[\w]+):(\d+)", text)
    if m:
        return ["%s#%d" % (m.group(1), i) for i in range(int(m.group(2)))]
    return [r.strip() for r in text.split(",")]


def split_top(text, sep=","):
    """Splits at `sep` outside (), [], {}, <> and strings."""
    parts, depth, current, quoted = [], 0, "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if not quoted:
            if ch in "([{<":
                depth += 1
            elif ch in ")]}>":
                depth -= 1
            elif ch == sep and depth == 0:
                parts.append(current.strip())
                current = ""
                continue
        current += ch
    if current.strip():
        parts.append(current.strip())
    return parts


def bracketed(text, start):
    """The text between the bracket at `start` and its match."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    raise ValueError("unbalanced")


def parse_ops(lines, pos):
    """Parses ops until a region end; returns (ops, next position)."""
    ops = []
    while pos < len(lines):
        line = lines[pos]
        stripped = line.strip()
        if stripped.startswith("})") or stripped == "}":
            return ops, pos
        if stripped.startswith("^bb"):
            pos += 1
            continue
        m = OP_RE.match(line)
        if not m:
            pos += 1
            continue
        rest = m.group("rest")
        props = ""
        pm = re.match(r"\s*<\{", rest)
        if pm:
            props = bracketed(rest, rest.index("{"))
        operands = [o.strip() for o in m.group("operands").split(",")
                    if o.strip()]
        op = Op(m.group("name"), split_results(m.group("res")), operands,
                props, None)
        if rest.rstrip().endswith("({"):
            header = lines[pos + 1].strip()
            bm = re.match(r"\^bb0\((.*)\):$", header)
            op.block_args = []
            if bm:
                op.block_args = [a.split(":")[0].strip()
                                 for a in split_top(bm.group(1))]
            op.region, pos = parse_ops(lines, pos + 2 if bm else pos + 1)
            close = lines[pos]
            op.result_types = parse_types(close.split("->")[-1]
                                          if "->" in close else "")
            op.close = close
        else:
            op.result_types = parse_types(rest.split("->")[-1]
                                          if "->" in rest else "")
        ops.append(op)
        pos += 1
    return ops, pos


class Function:
    def __init__(self, op):
        self.op = op
        self.name = re.search(r'sym_name = "(\w+)"', op.props).group(1)
        self.arg_attrs = self._attrs("arg_attrs")
        self.res_attrs = self._attrs("res_attrs")

    def _attrs(self, key):
        i = self.op.props.find(key + " = [")
        if i < 0:
            return None
        return split_top(bracketed(self.op.props, i + len(key) + 3))

    def attr(self, kind, index, key):
        attrs = self.arg_attrs if kind == "arg" else self.res_attrs
        if attrs is None:
            return None
        m = re.search(r'%s = "([^"]*)"' % re.escape(key), attrs[index])
        return m.group(1) if m else None

    def state(self, kind, index):
        attrs = self.arg_attrs if kind == "arg" else self.res_attrs
        if attrs is None:
            return None
        m = re.search(r'tpc.state = \{name = "(\w+)", param = "([^"]*)"\}',
                      attrs[index])
        return (m.group(2), m.group(1)) if m else None


def parse_module(text):
    lines = text.splitlines()
    ops, _ = parse_ops(lines, 1)
    return {f.name: f for f in (Function(op) for op in ops
                                if op.name == "func.func")}

#===----------------------------------------------------------------------===#
# Ops
#===----------------------------------------------------------------------===#

M64 = (1 << 64) - 1


def splitmix64(x):
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15))
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def keep_mask(seed, stream, step, rate, count, first):
    """The contract's counter-based dropout (executable-format.md)."""
    u = np.uint64
    key = splitmix64(u(seed) ^ splitmix64(u(stream) ^ splitmix64(u(step))))
    element = np.arange(first, first + count, dtype=np.uint64)
    counter = ((element >> u(4)) << u(2)) + ((element >> u(1)) & u(3))
    with np.errstate(over="ignore"):
        h = splitmix64(key + counter)
    # Four 16-bit draws per hash: field 2 ((i / 8) % 2) + i % 2, from the
    # top bits down.
    field = ((element >> u(3)) & u(1)) * u(2) + (element & u(1))
    draw = (h >> (u(48) - u(16) * field)) & u(0xFFFF)
    threshold = u(int(np.floor(rate * 65536 + 0.5)))  # llround
    keep = draw >= threshold
    return torch.from_numpy(keep.astype(np.uint8))


def dropout_scale(rate):
    return float(np.float32(1.0 / (1.0 - rate)))


class Interpreter:
    def __init__(self, functions, seed=7, step=0):
        self.functions, self.seed, self.step = functions, seed, step

    def mask(self, op, shape, rate, stream, block):
        count = int(np.prod(shape))
        first = 0 if block is None else int(block) * count
        return keep_mask(self.seed, stream, self.step, rate, count,
                         first).reshape(shape)

    def call(self, name, args):
        fn = self.functions[name]
        env = dict(zip(fn.op.block_args, args))
        return self.run(fn.op.region, env)

    def run(self, ops, env):
        for op in ops:
            if op.name in ("func.return", "scf.yield"):
                return [env[o] for o in op.operands]
            values = [env[o] for o in op.operands]
            results = self.eval(op, values, env)
            for name, value in zip(op.results, results):
                env[name] = value
        raise ValueError("region without terminator")

    def eval(self, op, v, env):
        name = op.name
        rt = op.result_types
        if name == "scf.for":
            lower, upper, step = v[0], v[1], v[2]
            acc = v[3:]
            for i in range(lower, upper, step):
                inner = dict(env)
                inner.update(zip(op.block_args, [i] + list(acc)))
                acc = self.run(op.region, inner)
            return acc
        if name == "func.call":
            callee = re.search(r"callee = @(\w+)", op.props).group(1)
            return self.call(callee, v)
        handler = getattr(self, "op_" + name.replace(".", "_"))
        result = handler(op, *v)
        return result if isinstance(result, (list, tuple)) else [result]

    # --- builtin dialects --------------------------------------------------
    def op_arith_constant(self, op):
        m = re.search(r"value = (dense<([^>]*)> : tensor<([^>]*)>|(-?\d+) : "
                      r"index)", op.props)
        if m.group(4) is not None:
            return int(m.group(4))
        shape = TensorType(m.group(3)).shape
        return torch.full(shape, float(m.group(2)))

    def op_arith_muli(self, op, a, b):
        return a * b

    def op_arith_index_cast(self, op, a):
        return a

    def op_tensor_from_elements(self, op, *xs):
        return torch.tensor(xs[0], dtype=torch.int64)

    def op_tensor_extract_slice(self, op, source, *dynamic):
        offsets = op.array("static_offsets")
        sizes = op.array("static_sizes")
        dynamic = list(dynamic)
        index = []
        for off, size in zip(offsets, sizes):
            if off < -(1 << 62):
                off = dynamic.pop(0)
            index.append(slice(off, off + size))
        return source[tuple(index)]

    # --- forward ------------------------------------------------------------
    def op_tpc_embedding(self, op, table, ids):
        return table[ids]

    @staticmethod
    def _linear_matrix(w, layout):
        if layout == "in_out":
            return w.reshape(w.shape[0], -1)          # [in, n]
        return w.reshape(-1, w.shape[-1]).t()         # [in, n]

    def op_tpc_linear(self, op, x, w, b=None):
        layout = op.enum("layout") or "in_out"
        out = x @ self._linear_matrix(w, layout)
        out = out.reshape(rt_shape(op))
        return out + b if b is not None else out

    def op_tpc_batch_matmul(self, op, l, r):
        if op.unit("transpose_lhs"):
            l = l.transpose(-1, -2)
        if op.unit("transpose_rhs"):
            r = r.transpose(-1, -2)
        scale = op.float("scale")
        return (l @ r) * (1.0 if scale is None else scale)

    def op_tpc_layer_norm(self, op, x, w, b):
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b,
                                              op.float("epsilon"))

    def op_tpc_rms_norm(self, op, x, w):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + op.float("epsilon"))
        return x * rstd * w

    def op_tpc_gelu(self, op, x):
        if op.enum("approximation") == "tanh":
            c = math.sqrt(2 / math.pi)
            return 0.5 * x * (1 + torch.tanh(c * (x + 0.044715 * x ** 3)))
        return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))

    def op_tpc_silu(self, op, x):
        return x * torch.sigmoid(x)

    def op_tpc_dropout(self, op, x):
        rate = op.float("rate")
        mask = self.mask(op, x.shape, rate, op.int("stream"), None)
        return x * mask * dropout_scale(rate)

    @staticmethod
    def _causal(x):
        q, k = x.shape[-2], x.shape[-1]
        i = torch.arange(q).unsqueeze(1)
        j = torch.arange(k).unsqueeze(0)
        return x.masked_fill(j > i + (k - q), float("-inf"))

    def op_tpc_softmax(self, op, x):
        if op.unit("causal"):
            x = self._causal(x)
        return torch.softmax(x, -1)

    def op_tpc_add(self, op, l, r):
        return l + r

    def op_tpc_mul(self, op, l, r):
        return l * r

    def _scores(self, op, q, k):
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
        s = (q @ k.transpose(-1, -2)) * op.float("scale")
        return self._causal(s) if op.unit("causal") else s

    def _attention(self, op, q, k, v, block):
        v = v.repeat_interleave(q.shape[1] // k.shape[1], 1)
        p = torch.softmax(self._scores(op, q, k), -1)
        rate = op.float("dropout_rate") or 0.0
        if rate:
            mask = self.mask(op, p.shape, rate, op.int("dropout_stream", 0),
                             block)
            p = p * mask * dropout_scale(rate)
        return p @ v

    def op_tpc_attention(self, op, q, k, v, block=None):
        out = self._attention(op, q, k, v, block)
        if op.unit("with_lse"):  # and each row's log-sum-exp
            return [out, torch.logsumexp(self._scores(op, q, k), -1)]
        return out

    @staticmethod
    def _rotary_tables(op, x):
        d, s = x.shape[-1], x.shape[-2]
        theta, offset = op.float("theta"), op.int("offset", 0)
        inv = theta ** (-torch.arange(0, d // 2) * 2.0 / d)
        angle = (offset + torch.arange(s)).unsqueeze(1) * inv.unsqueeze(0)
        angle = torch.cat([angle, angle], -1)
        return torch.cos(angle), torch.sin(angle)

    @staticmethod
    def _rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat([-x[..., h:], x[..., :h]], -1)

    def op_tpc_rotary(self, op, x):
        cos, sin = self._rotary_tables(op, x)
        return x * cos + self._rotate_half(x) * sin

    def op_tpc_cross_entropy(self, op, logits, labels):
        ignore = op.int("ignore_index", -100)
        keep = labels != ignore
        lse = torch.logsumexp(logits, -1)
        picked = logits.gather(-1, labels.clamp(min=0).unsqueeze(-1))
        loss = ((lse - picked.squeeze(-1)) * keep).sum()
        return loss, keep.sum()

    def op_tpc_loss_mean(self, op, s, count):
        return s / count if int(count) != 0 else s * 0.0

    def op_tpc_reshape(self, op, x):
        return x.reshape(rt_shape(op))

    def op_tpc_transpose(self, op, x):
        return x.permute(*op.array("permutation"))

    def op_tpc_slice(self, op, x):
        return x.narrow(op.int("dim"), op.int("offset"), op.int("size"))

    def op_tpc_repeat(self, op, x):
        return x.repeat_interleave(op.int("repeats"), op.int("dim"))

    def op_tpc_cast(self, op, x):
        return x

    # --- backward (formulas) ------------------------------------------------
    def op_tpc_embedding_grad(self, op, dy, ids):
        vocab, hidden = rt_shape(op)
        out = torch.zeros(vocab, hidden)
        return out.index_add_(0, ids.reshape(-1), dy.reshape(-1, hidden))

    def op_tpc_linear_input_grad(self, op, dy, w):
        layout = op.enum("layout") or "in_out"
        m = self._linear_matrix(w, layout)          # [in, n]
        lead = dy.shape[:dy.dim() - (w.dim() - 1)]
        return (dy.reshape(-1, m.shape[1]) @ m.t()).reshape(*lead, m.shape[0])

    def op_tpc_linear_weight_grad(self, op, x, dy):
        x2 = x.reshape(-1, x.shape[-1])
        dy2 = dy.reshape(x2.shape[0], -1)
        if (op.enum("layout") or "in_out") == "in_out":
            return (x2.t() @ dy2).reshape(rt_shape(op))
        return (dy2.t() @ x2).reshape(rt_shape(op))

    def op_tpc_sum_to(self, op, x):
        shape = rt_shape(op)
        lead = x.dim() - len(shape)
        return x.sum(dim=tuple(range(lead))) if lead else x.clone()

    @staticmethod
    def _lead_sum(x):
        return x.reshape(-1, x.shape[-1]).sum(0)

    def _xhat(self, x, eps):
        mean = x.mean(-1, keepdim=True)
        rstd = torch.rsqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)
        return (x - mean) * rstd, rstd

    def op_tpc_layer_norm_input_grad(self, op, dy, x, w):
        xhat, rstd = self._xhat(x, op.float("epsilon"))
        g = dy * w
        return rstd * (g - g.mean(-1, keepdim=True)
                       - xhat * (g * xhat).mean(-1, keepdim=True))

    def op_tpc_layer_norm_param_grad(self, op, dy, x):
        xhat, _ = self._xhat(x, op.float("epsilon"))
        return self._lead_sum(dy * xhat), self._lead_sum(dy)

    def op_tpc_rms_norm_input_grad(self, op, dy, x, w):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + op.float("epsilon"))
        g = dy * w
        return rstd * (g - x * rstd ** 2 * (g * x).mean(-1, keepdim=True))

    def op_tpc_rms_norm_param_grad(self, op, dy, x):
        rstd = torch.rsqrt((x * x).mean(-1, keepdim=True) + op.float("epsilon"))
        return self._lead_sum(dy * x * rstd)

    def op_tpc_gelu_grad(self, op, dy, x):
        if op.enum("approximation") == "tanh":
            c = math.sqrt(2 / math.pi)
            t = torch.tanh(c * (x + 0.044715 * x ** 3))
            d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (
                1 + 3 * 0.044715 * x * x)
        else:
            d = 0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * torch.exp(
                -0.5 * x * x) / math.sqrt(2 * math.pi)
        return dy * d

    def op_tpc_silu_grad(self, op, dy, x):
        s = torch.sigmoid(x)
        return dy * s * (1 + x * (1 - s))

    def op_tpc_softmax_grad(self, op, dy, y):
        return y * (dy - (dy * y).sum(-1, keepdim=True))

    def op_tpc_dropout_mask(self, op, block=None):
        return self.mask(op, rt_shape(op), op.float("rate"), op.int("stream"),
                         block)

    def op_tpc_apply_mask(self, op, x, mask):
        return x * mask * dropout_scale(op.float("rate"))

    def op_tpc_attention_grad(self, op, do, q, k, v, *rest):
        # Operands: [output, lse] (the forward's: autograd does not need
        # them), [block] (segment sizes).
        sizes = [int(s) for s in re.search(
            r"operandSegmentSizes = array<i32: ([\d, ]*)>", op.props
        ).group(1).split(",")]
        block = rest[-1] if sizes[6] else None
        q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
        with torch.enable_grad():
            out = self._attention(op, q, k, v, block)
            return torch.autograd.grad(out, (q, k, v), do)

    def op_tpc_rotary_grad(self, op, dy):
        cos, sin = self._rotary_tables(op, dy)
        return dy * cos - self._rotate_half(dy) * sin

    def op_tpc_cross_entropy_grad(self, op, logits, labels, dsum):
        keep = (labels != op.int("ignore_index", -100)).unsqueeze(-1)
        onehot = torch.nn.functional.one_hot(labels.clamp(min=0),
                                             logits.shape[-1])
        return (torch.softmax(logits, -1) - onehot) * dsum * keep

    def op_tpc_inverse_count(self, op, count):
        return torch.tensor(1.0 / int(count) if int(count) else 0.0)

    def op_tpc_count_targets(self, op, labels):
        return (labels != op.int("ignore_index", -100)).sum()

    def op_tpc_pad(self, op, x):
        out = torch.zeros(rt_shape(op))
        out.narrow(op.int("dim"), op.int("offset"), x.shape[op.int("dim")]
                   ).copy_(x)
        return out

    def op_tpc_sum_groups(self, op, x):
        dim, r = op.int("dim"), op.int("repeats")
        shape = list(x.shape)
        shape[dim:dim + 1] = [shape[dim] // r, r]
        return x.reshape(shape).sum(dim + 1)

    # --- optimizer ----------------------------------------------------------
    def op_tpc_sum_squares(self, op, *xs):
        return sum((x * x).sum() for x in xs)

    def op_tpc_clip_coefficient(self, op, sum_squares):
        norm = torch.sqrt(sum_squares)
        max_norm = op.float("max_norm")
        if not max_norm:
            return norm, torch.tensor(1.0)
        return norm, torch.clamp(max_norm / (norm + 1e-6), max=1.0)

    def op_tpc_lr_schedule(self, op, step):
        lr, t = op.float("lr"), int(step)
        if op.enum("schedule") == "constant":
            return torch.tensor(lr)
        warmup, total = op.int("warmup", 0), op.int("total", 0)
        min_lr = op.float("min_lr") or 0.0
        if warmup and t <= warmup:
            return torch.tensor(lr * t / warmup)
        p = min(1.0, (t - warmup) / (total - warmup))
        return torch.tensor(min_lr + (lr - min_lr) * (1 + math.cos(math.pi * p))
                            / 2)

    def op_tpc_adamw_update(self, op, p, g, m, v, lr, step, scale=None):
        b1, b2 = op.float("beta1"), op.float("beta2")
        eps, wd, t = op.float("eps"), op.float("weight_decay"), int(step)
        if scale is not None:
            g = g * scale
        p = p * (1 - lr * wd)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        denom = torch.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
        return p - (lr / (1 - b1 ** t)) * m / denom, m, v

    def op_tpc_sgd_update(self, op, p, g, *rest):
        # Operands: [momentum_buffer], lr, [grad_scale] (segment sizes).
        sizes = [int(s) for s in re.search(
            r"operandSegmentSizes = array<i32: ([\d, ]*)>", op.props
        ).group(1).split(",")]
        rest = list(rest)
        buf = rest.pop(0) if sizes[2] else None
        lr = rest.pop(0)
        scale = rest.pop(0) if sizes[4] else None
        if scale is not None:
            g = g * scale
        g = g + op.float("weight_decay") * p
        if buf is None:
            return [p - lr * g]
        buf = op.float("momentum") * buf + g
        return p - lr * buf, buf


def rt_shape(op):
    return op.result_types[0].shape

#===----------------------------------------------------------------------===#
# Checks
#===----------------------------------------------------------------------===#


def relative_error(actual, expected):
    denom = expected.norm().item()
    diff = (actual - expected).norm().item()
    return diff / denom if denom else diff


def prepare(forward):
    """Reads @forward's argument types and vocabulary (the last dimension
    of the logits the cross-entropy reads)."""
    function_arg_types(forward)
    logits = next(op.operands[0] for op in forward.op.region
                  if op.name == "tpc.cross_entropy")
    forward.vocab = next(op.result_types[0].shape[-1]
                         for op in forward.op.region if logits in op.results)


def function_arg_types(fn):
    m = re.search(r"function_type = \(([^)]*)\)", fn.op.props)
    fn.arg_types = parse_types(m.group(1))


def make_inputs(forward, seed):
    """Random weights (norm scales near one) and a batch whose rows ignore
    (-100) shrinking shares of their targets, so that microbatches hold
    different numbers of targets."""
    gen = torch.Generator().manual_seed(seed)
    names, params = [], []
    for i in range(len(forward.arg_types)):
        name = forward.attr("arg", i, "tpc.param")
        if name is None:
            continue
        t = torch.randn(forward.arg_types[i].shape, generator=gen) * 0.2
        if "ln" in name or "norm" in name:
            t = t + 1.0
        params.append(t)
        names.append(name)
    ids_index = next(i for i in range(len(forward.arg_types))
                     if forward.attr("arg", i, "tpc.input") == "input_ids")
    batch, seq = forward.arg_types[ids_index].shape
    ids = torch.randint(0, forward.vocab, (batch, seq), generator=gen)
    labels = torch.randint(0, forward.vocab, (batch, seq), generator=gen)
    for r in range(batch - 1):
        labels[r, : seq * (batch - 1 - r) // (2 * batch)] = -100
    return names, params, ids, labels


def forward_loss(forward, interp, params, ids, labels):
    """The `loss` result of @forward (which may also return logits)."""
    results = interp.call("forward", params + [ids, labels])
    index = next(i for i in range(len(results))
                 if forward.attr("res", i, "tpc.output") in (None, "loss"))
    return results[index]


def check_grad(functions, args):
    forward, step = functions["forward"], functions["train_step"]
    prepare(forward)
    names, params, ids, labels = make_inputs(forward, args.seed)

    interp = Interpreter(functions)
    leaves = [p.clone().requires_grad_(True) for p in params]
    with torch.enable_grad():
        loss = forward_loss(forward, interp, leaves, ids, labels)
        loss.backward()
    with torch.no_grad():
        results = interp.call("train_step", params + [ids, labels])

    status = 0
    err = abs(results[0].item() - loss.item()) / abs(loss.item())
    print("loss %.12g reference %.12g relative error %.3g"
          % (results[0].item(), loss.item(), err))
    status |= err > args.tolerance
    worst = 0.0
    by_name = {step.attr("res", i, "tpc.grad"): results[i]
               for i in range(len(results))
               if step.attr("res", i, "tpc.grad") is not None}
    for name, leaf in zip(names, leaves):
        e = relative_error(by_name[name], leaf.grad)
        worst = max(worst, e)
        if e > args.tolerance:
            print("gradient of %s: relative error %.3g" % (name, e))
            status = 1
    print("%d gradients, worst relative error %.3g" % (len(names), worst))
    return status


def check_optimizer(functions, args):
    forward, step = functions["forward"], functions["train_step"]
    prepare(forward)
    function_arg_types(step)
    names, params, ids, labels = make_inputs(forward, args.seed)

    # Reference: torch.optim on autograd of @forward, one param group per
    # weight decay (decay-exclude), the rate set per step.
    leaves = [p.clone().requires_grad_(True) for p in params]
    exclude = [s for s in args.decay_exclude.split(",") if s]
    groups = {}
    for name, leaf in zip(names, leaves):
        decayed = not any(s in name for s in exclude)
        groups.setdefault(decayed, []).append(leaf)
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(
            [{"params": ps, "weight_decay": args.weight_decay if d else 0.0}
             for d, ps in groups.items()],
            lr=args.lr, betas=(args.beta1, args.beta2), eps=args.eps)
    else:
        opt = torch.optim.SGD(
            [{"params": ps, "weight_decay": args.weight_decay if d else 0.0}
             for d, ps in groups.items()],
            lr=args.lr, momentum=args.momentum)

    def lr_at(t):
        if args.schedule == "constant":
            return args.lr
        if args.warmup and t <= args.warmup:
            return args.lr * t / args.warmup
        p = min(1.0, (t - args.warmup) / (args.total - args.warmup))
        return args.min_lr + (args.lr - args.min_lr) * (
            1 + math.cos(math.pi * p)) / 2

    ref_losses, ref_norms = [], []
    for t in range(1, args.steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(t)
        opt.zero_grad()
        interp = Interpreter(functions, step=t - 1)
        with torch.enable_grad():
            loss = forward_loss(forward, interp, leaves, ids, labels)
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(
            leaves, args.grad_clip if args.grad_clip > 0 else float("inf"))
        ref_losses.append(loss.item())
        ref_norms.append(norm.item())
        opt.step()

    # @train_step: params, input_ids, labels, step, state...
    state_args = [step.state("arg", i) for i in range(len(step.arg_types))]
    state = {s: torch.zeros(step.arg_types[i].shape)
             for i, s in enumerate(state_args) if s is not None}
    current = dict(zip(names, params))
    status = 0
    for t in range(1, args.steps + 1):
        call_args = []
        for i in range(len(step.arg_types)):
            pname = step.attr("arg", i, "tpc.param")
            iname = step.attr("arg", i, "tpc.input")
            if pname is not None:
                call_args.append(current[pname])
            elif iname == "input_ids":
                call_args.append(ids)
            elif iname == "labels":
                call_args.append(labels)
            elif iname == "step":
                call_args.append(torch.tensor(t))
            else:
                call_args.append(state[state_args[i]])
        with torch.no_grad():
            results = Interpreter(functions, step=t - 1).call("train_step",
                                                              call_args)
        outputs = {}
        for i, value in enumerate(results):
            out = step.attr("res", i, "tpc.output")
            upd = step.attr("res", i, "tpc.update")
            st = step.state("res", i)
            if out is not None:
                outputs[out] = value.item()
            elif upd is not None:
                current[upd] = value
            elif st is not None:
                state[st] = value
        for what, got, want in (("loss", outputs["loss"], ref_losses[t - 1]),
                                ("grad_norm", outputs["grad_norm"],
                                 ref_norms[t - 1]),
                                ("lr", outputs["lr"], lr_at(t))):
            e = abs(got - want) / abs(want) if want else abs(got)
            if e > args.tolerance:
                print("step %d %s %.12g reference %.12g" % (t, what, got, want))
                status = 1
        print("step %d loss %.10f grad_norm %.8f lr %.6g"
              % (t, outputs["loss"], outputs["grad_norm"], outputs["lr"]))
    worst = max(relative_error(current[n], leaf.detach())
                for n, leaf in zip(names, leaves))
    print("%d parameters after %d steps, worst relative error %.3g"
          % (len(names), args.steps, worst))
    return status | (worst > args.tolerance)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["grad", "optimizer"])
    parser.add_argument("module")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=float, default=1e-9)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--beta1", type=float, default=0.9)
    parser.add_argument("--beta2", type=float, default=0.999)
    parser.add_argument("--eps", type=float, default=1e-8)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--decay-exclude", default="")
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--grad-clip", type=float, default=0.0)
    parser.add_argument("--schedule", default="constant")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--total", type=int, default=0)
    parser.add_argument("--min-lr", type=float, default=0.0)
    args = parser.parse_args()
    with open(args.module) as f:
        functions = parse_module(f.read())
    check = check_grad if args.mode == "grad" else check_optimizer
    sys.exit(check(functions, args))


if __name__ == "__main__":
    main()
