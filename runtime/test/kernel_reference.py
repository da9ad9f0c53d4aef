#!/usr/bin/python3
"""Reference cases for the CPU kernels (runtime/cpu/*.cpp).

For every kernel and a few shapes, makes random inputs with a fixed seed,
computes the expected outputs with PyTorch ops, and writes inputs + outputs
into one safetensors file per case in the output folder. The kernel name and
its attributes go in the file's __metadata__. tpcrt-kernel-check then runs the
C++ kernels on the inputs and compares.

Needs only torch (1.13 is enough): the safetensors format is written by hand,
and attention is written with matmul/softmax (no scaled_dot_product_attention
in 1.13). Backward kernels are checked against torch.autograd in float64,
optimizers against torch.optim (float32) over several steps.

Usage: kernel_reference.py OUTPUT_DIR
"""

import json
import math
import os
import struct
import sys

import torch

DTYPES = {torch.float32: "F32", torch.int64: "I64", torch.bfloat16: "BF16",
          torch.float16: "F16", torch.uint8: "U8"}


def write_safetensors(path, tensors, metadata):
    header = {"__metadata__": {k: str(v) for k, v in metadata.items()}}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        # numpy has no bfloat16: write 16-bit floats as their bits.
        bits = t.view(torch.int16) if t.dtype in (torch.bfloat16,
                                                  torch.float16) else t
        data = bits.numpy().tobytes()
        header[name] = {
            "dtype": DTYPES[t.dtype],
            "shape": list(t.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def randn(*shape):
    return torch.randn(*shape, dtype=torch.float32)


def rotate_half(x):
    # Hugging Face transformers' rotate_half.
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def causal_mask(q, k):
    i = torch.arange(q).unsqueeze(1)
    j = torch.arange(k).unsqueeze(0)
    return j > i + (k - q)


MASK64 = (1 << 64) - 1


def splitmix64(x):
    # The dropout stream of the executable contract, written independently of
    # runtime/include/tpcrt/Random.h from the same definition.
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def dropout_keep(seed, stream, step, rate, first, count):
    """Keep mask of elements [first, first + count) of an op's stream."""
    key = splitmix64(seed ^ splitmix64(stream ^ splitmix64(step)))
    threshold = int(math.floor(rate * 65536 + 0.5))  # llround
    return torch.tensor([dropout_draw(key, i) >= threshold
                         for i in range(first, first + count)])


def dropout_draw(key, i):
    """Element i's 16-bit draw: field 2 ((i // 8) % 2) + i % 2 (from the
    top) of the hash of counter 4 (i // 16) + (i % 8) // 2."""
    h = splitmix64((key + 4 * (i >> 4) + ((i >> 1) & 3)) & MASK64)
    field = 2 * ((i >> 3) & 1) + (i & 1)
    return (h >> (48 - 16 * field)) & 0xFFFF


def cases():
    # embedding
    table = randn(50, 16)
    ids = torch.randint(0, 50, (3, 7), dtype=torch.int64)
    yield "embedding", {}, {"table": table, "ids": ids}, \
        {"out": torch.nn.functional.embedding(ids, table)}

    # linear: in_out with several output dims and a bias; out_in with and
    # without bias; shapes not multiples of the fallback's block sizes.
    x = randn(2, 5, 12)
    w = randn(12, 3, 4)
    b = randn(3, 4)
    out = (x.reshape(-1, 12) @ w.reshape(12, -1) + b.reshape(-1)).reshape(
        2, 5, 3, 4)
    yield "linear_in_out_bias", {"kernel": "linear", "layout": "in_out"}, \
        {"x": x, "w": w, "b": b}, {"out": out}
    x = randn(3, 130)
    w = randn(150, 130)
    yield "linear_out_in", {"kernel": "linear", "layout": "out_in"}, \
        {"x": x, "w": w}, {"out": torch.nn.functional.linear(x, w)}
    x = randn(4, 33)
    w = randn(17, 33)
    b = randn(17)
    yield "linear_out_in_bias", {"kernel": "linear", "layout": "out_in"}, \
        {"x": x, "w": w, "b": b}, {"out": torch.nn.functional.linear(x, w, b)}

    # batch_matmul, every transpose combination.
    for tl in (0, 1):
        for tr in (0, 1):
            lhs = randn(2, 3, 5, 7) if not tl else randn(2, 3, 7, 5)
            rhs = randn(2, 3, 7, 6) if not tr else randn(2, 3, 6, 7)
            a = lhs.transpose(-1, -2) if tl else lhs
            bb = rhs.transpose(-1, -2) if tr else rhs
            scale = 0.25 if tl != tr else 1.0
            yield f"batch_matmul_tl{tl}_tr{tr}", {
                "kernel": "batch_matmul", "transpose_lhs": tl,
                "transpose_rhs": tr, "scale": scale}, \
                {"lhs": lhs, "rhs": rhs}, {"out": scale * (a @ bb)}

    # normalizations
    x = randn(4, 6, 33) * 3 + 1
    g = randn(33)
    b = randn(33)
    yield "layer_norm", {"epsilon": 1e-5}, {"x": x, "weight": g, "bias": b}, \
        {"out": torch.nn.functional.layer_norm(x, (33,), g, b, 1e-5)}
    x = randn(4, 6, 64) * 2
    g = randn(64)
    eps = 1e-6
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g
    yield "rms_norm", {"epsilon": eps}, {"x": x, "weight": g}, {"out": ref}

    # activations
    x = randn(1000) * 4
    yield "gelu_erf", {"kernel": "gelu", "approximation": "erf"}, {"x": x}, \
        {"out": torch.nn.functional.gelu(x)}
    yield "gelu_tanh", {"kernel": "gelu", "approximation": "tanh"}, {"x": x}, \
        {"out": torch.nn.functional.gelu(x, approximate="tanh")}
    yield "silu", {}, {"x": x}, {"out": torch.nn.functional.silu(x)}

    # add / mul with and without broadcasting
    for op, fn in (("add", torch.add), ("mul", torch.mul)):
        lhs = randn(4, 6, 8)
        rhs = randn(6, 8)
        yield f"{op}_broadcast", {"kernel": op}, {"lhs": lhs, "rhs": rhs}, \
            {"out": fn(lhs, rhs)}
        rhs = randn(4, 6, 8)
        yield f"{op}_same", {"kernel": op}, {"lhs": lhs, "rhs": rhs}, \
            {"out": fn(lhs, rhs)}

    # softmax: plain, causal square, causal with more keys than queries
    for name, q, k, causal in (("softmax", 5, 9, 0),
                               ("softmax_causal", 7, 7, 1),
                               ("softmax_causal_rect", 5, 9, 1)):
        x = randn(2, 3, q, k) * 3
        s = x.masked_fill(causal_mask(q, k), float("-inf")) if causal else x
        yield name, {"kernel": "softmax", "causal": causal}, {"x": x}, \
            {"out": torch.softmax(s, dim=-1)}

    # attention, GQA 8 query heads on 4 kv heads and plain MHA
    for name, h, kv, sq, sk, d, dv, causal in (
            ("attention_gqa_causal", 8, 4, 7, 7, 16, 16, 1),
            ("attention_gqa", 8, 4, 7, 7, 16, 16, 0),
            ("attention_gqa_causal_rect", 8, 4, 5, 9, 16, 8, 1),
            ("attention_mha_causal", 4, 4, 6, 6, 8, 8, 1),
            # more query rows than one block of the kernel (64)
            ("attention_blocks_causal_rect", 4, 2, 150, 170, 16, 8, 1),
            ("attention_blocks", 2, 1, 130, 70, 8, 8, 0)):
        q = randn(2, h, sq, d)
        k = randn(2, kv, sk, d)
        v = randn(2, kv, sk, dv)
        scale = 1.0 / math.sqrt(d)
        k8 = k.repeat_interleave(h // kv, dim=1)
        v8 = v.repeat_interleave(h // kv, dim=1)
        s = (q @ k8.transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(causal_mask(sq, sk), float("-inf"))
        out = torch.softmax(s, dim=-1) @ v8
        yield name, {"kernel": "attention", "causal": causal,
                     "scale": repr(scale)}, {"q": q, "k": k, "v": v}, \
            {"out": out, "lse": torch.logsumexp(s, dim=-1)}

    # attention with dropout on the probabilities, after the softmax and
    # before P.V, indexed in [b, h, sq, sk]
    for name, sq, sk, causal, rate in (
            ("attention_dropout_causal", 7, 7, 1, 0.25),
            ("attention_dropout", 5, 9, 0, 0.5),
            ("attention_dropout_blocks_causal", 100, 100, 1, 0.1)):
        b, h, kv, d = 2, 4, 2, 8
        q = randn(b, h, sq, d)
        k = randn(b, kv, sk, d)
        v = randn(b, kv, sk, d)
        scale = 1.0 / math.sqrt(d)
        seed, stream, step = 1234, 5, 2
        s = (q @ k.repeat_interleave(h // kv, dim=1).transpose(-1, -2)) * scale
        if causal:
            s = s.masked_fill(causal_mask(sq, sk), float("-inf"))
        p = torch.softmax(s, dim=-1)
        keep = dropout_keep(seed, stream, step, rate, 0, p.numel())
        p = torch.where(keep.reshape(p.shape),
                        p * torch.tensor(1.0 / (1.0 - rate)), torch.zeros(()))
        out = p @ v.repeat_interleave(h // kv, dim=1)
        yield name, {"kernel": "attention", "causal": causal,
                     "scale": repr(scale), "seed": seed, "stream": stream,
                     "step": step, "rate": repr(rate)}, \
            {"q": q, "k": k, "v": v}, \
            {"out": out, "lse": torch.logsumexp(s, dim=-1)}

    # dropout: the whole tensor, and a piece of it at its global offset (an
    # odd one starts in the middle of a hash's pair)
    for name, shape, rate, first in (("dropout", (4, 8, 33), 0.1, 0),
                                     ("dropout_half", (1000,), 0.5, 0),
                                     ("dropout_slice", (300,), 0.3, 700),
                                     ("dropout_odd_slice", (301,), 0.3, 701)):
        x = randn(*shape)
        seed, stream, step = 42, 3, 1
        keep = dropout_keep(seed, stream, step, rate, first, x.numel())
        out = torch.where(keep.reshape(shape),
                          x * torch.tensor(1.0 / (1.0 - rate)), torch.zeros(()))
        yield name, {"kernel": "dropout", "seed": seed, "stream": stream,
                     "step": step, "rate": repr(rate), "first_index": first}, \
            {"x": x}, {"out": out}

    # cast: bf16/f16 rounding, compared bit for bit. Ties at both precisions,
    # subnormals, overflow, signed zero and infinities besides random values.
    special = [1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, 1.0 + 2 ** -11,
               1.0 + 3 * 2 ** -11, 65504.0, 65519.0, 65520.0, 70000.0,
               2 ** -24, 2 ** -25, 1.5 * 2 ** -25, 2 ** -26, 1e-40, 3e38,
               -0.0, 0.0, float("inf"), float("-inf")]
    x = torch.cat([torch.tensor(special), -torch.tensor(special),
                   randn(500) * 100, randn(500) * 1e-6])
    yield "cast", {}, {"x": x}, {
        "bf16": x.to(torch.bfloat16), "f16": x.to(torch.float16),
        "bf16_from_f16": x.to(torch.float16).to(torch.bfloat16),
        "f16_from_bf16": x.to(torch.bfloat16).to(torch.float16),
        "f32_from_bf16": x.to(torch.bfloat16).to(torch.float32),
        "f32_from_f16": x.to(torch.float16).to(torch.float32)}

    # rotary, Hugging Face convention (inv_freq in fp32, as HF computes it)
    for name, theta, offset in (("rotary", 10000.0, 0),
                                ("rotary_offset", 500000.0, 5)):
        x = randn(2, 4, 9, 16)
        d = x.shape[-1]
        inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2).float() / d))
        t = torch.arange(offset, offset + x.shape[2]).float()
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        out = x * emb.cos() + rotate_half(x) * emb.sin()
        yield name, {"kernel": "rotary", "theta": theta, "offset": offset}, \
            {"x": x}, {"out": out}

    # cross_entropy with ignored labels, and with none ignored
    for name, ignore, frac in (("cross_entropy_ignore", -100, 0.3),
                               ("cross_entropy", -100, 0.0)):
        logits = randn(3, 10, 50) * 4
        labels = torch.randint(0, 50, (3, 10), dtype=torch.int64)
        labels[torch.rand(3, 10) < frac] = ignore
        if frac:
            labels[0, 0] = ignore  # at least one ignored
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, 50), labels.reshape(-1), ignore_index=ignore,
            reduction="sum")
        count = (labels != ignore).sum().reshape(())
        yield name, {"kernel": "cross_entropy", "ignore_index": ignore}, \
            {"logits": logits, "labels": labels}, \
            {"loss_sum": loss.reshape(()), "count": count}

    # shape ops
    for name, perm in (("transpose_0213", [0, 2, 1, 3]),
                       ("transpose_3102", [3, 1, 0, 2])):
        x = randn(2, 3, 4, 5)
        yield name, {"kernel": "transpose",
                     "permutation": ",".join(map(str, perm))}, \
            {"x": x}, {"out": x.permute(*perm)}
    x = randn(4, 10, 6)
    yield "slice", {"dim": 1, "offset": 2, "size": 5}, {"x": x}, \
        {"out": x[:, 2:7, :]}
    x = randn(64, 8)
    yield "slice_dim0", {"kernel": "slice", "dim": 0, "offset": 0,
                         "size": 32}, {"x": x}, {"out": x[0:32]}
    x = randn(2, 4, 7, 16)
    yield "repeat", {"dim": 1, "repeats": 2}, {"x": x}, \
        {"out": x.repeat_interleave(2, dim=1)}
    x = randn(3, 5)
    yield "repeat_last", {"kernel": "repeat", "dim": 1, "repeats": 3}, \
        {"x": x}, {"out": x.repeat_interleave(3, dim=1)}


def grads(fn, inputs, dy, wrt):
    """Gradients of sum(fn(*inputs) * dy) w.r.t. the inputs named in wrt,
    in float64, returned as float32."""
    leaves = {k: v.detach().double().requires_grad_(k in wrt)
              if v.is_floating_point() else v for k, v in inputs.items()}
    out = fn(**leaves)
    torch.autograd.backward(out, dy.double())
    return {k: leaves[k].grad.float() for k in wrt}


def attention_ref(q, k, v, scale, causal, keep=None, rate=0.0):
    h, kv = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // kv, dim=1)
    v = v.repeat_interleave(h // kv, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(causal_mask(q.shape[2], k.shape[2]), float("-inf"))
    p = torch.softmax(s, dim=-1)
    if keep is not None:
        p = torch.where(keep, p * (1.0 / (1.0 - rate)), torch.zeros((),
                                                                   dtype=p.dtype))
    return p @ v


def training_cases():
    """Backward and optimizer kernels (CpuTrainingKernels.h)."""
    # embedding_grad: repeated ids accumulate
    table = randn(50, 16)
    ids = torch.randint(0, 20, (3, 7), dtype=torch.int64)
    dy = randn(3, 7, 16)
    g = grads(lambda table, ids: torch.nn.functional.embedding(ids, table),
              {"table": table, "ids": ids}, dy, ["table"])
    yield "embedding_grad", {}, {"ids": ids, "dy": dy, "table": table}, \
        {"dtable": g["table"]}

    # linear: input, weight and bias gradients, both layouts, several
    # output dims
    for name, layout, xs, ws in (
            ("linear_grad_in_out", "in_out", (2, 5, 12), (12, 3, 4)),
            ("linear_grad_out_in", "out_in", (3, 130), (150, 130)),
            ("linear_grad_out_in_3d", "out_in", (2, 3, 8), (2, 5, 8))):
        x, w = randn(*xs), randn(*ws)
        k = xs[-1]
        n = w.numel() // k
        b = randn(n)
        if layout == "in_out":
            fn = lambda x, w, b: x @ w.reshape(k, n) + b  # noqa: E731
        else:
            fn = lambda x, w, b: x @ w.reshape(n, k).t() + b  # noqa: E731
        dy = randn(*xs[:-1], n)
        g = grads(fn, {"x": x, "w": w, "b": b}, dy, ["x", "w", "b"])
        yield name, {"kernel": "linear_grad", "layout": layout}, \
            {"x": x, "w": w, "dy": dy}, \
            {"dx": g["x"], "dw": g["w"], "db": g["b"]}

    # mul with a broadcast rhs: its rhs gradient is a sum_to
    lhs, rhs, dy = randn(4, 6, 8), randn(6, 8), randn(4, 6, 8)
    g = grads(lambda lhs, rhs: lhs * rhs, {"lhs": lhs, "rhs": rhs}, dy,
              ["rhs"])
    yield "sum_to_mul_rhs", {"kernel": "sum_to"}, {"x": dy * lhs}, \
        {"out": g["rhs"]}

    # norms
    x, w, b, dy = randn(4, 6, 33) * 3 + 1, randn(33), randn(33), randn(4, 6, 33)
    g = grads(lambda x, w, b: torch.nn.functional.layer_norm(x, (33,), w, b,
                                                             1e-5),
              {"x": x, "w": w, "b": b}, dy, ["x", "w", "b"])
    yield "layer_norm_grad", {"epsilon": 1e-5}, {"x": x, "w": w, "dy": dy}, \
        {"dx": g["x"], "dw": g["w"], "db": g["b"]}
    x, w, dy = randn(4, 6, 64) * 2, randn(64), randn(4, 6, 64)
    g = grads(lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) +
                                           1e-6) * w,
              {"x": x, "w": w}, dy, ["x", "w"])
    yield "rms_norm_grad", {"epsilon": 1e-6}, {"x": x, "w": w, "dy": dy}, \
        {"dx": g["x"], "dw": g["w"]}

    # activations
    x, dy = randn(1000) * 4, randn(1000)
    for name, approx in (("gelu_grad_erf", "none"), ("gelu_grad_tanh", "tanh")):
        g = grads(lambda x: torch.nn.functional.gelu(x, approximate=approx),
                  {"x": x}, dy, ["x"])
        yield name, {"kernel": "gelu_grad",
                     "approximation": "erf" if approx == "none" else "tanh"}, \
            {"x": x, "dy": dy}, {"dx": g["x"]}
    g = grads(lambda x: torch.nn.functional.silu(x), {"x": x}, dy, ["x"])
    yield "silu_grad", {}, {"x": x, "dy": dy}, {"dx": g["x"]}

    # dropout as mask + apply_mask, forward and backward
    x, dy = randn(4, 8, 33), randn(4, 8, 33)
    seed, stream, step, rate = 7, 11, 3, 0.2
    keep = dropout_keep(seed, stream, step, rate, 0, x.numel()).reshape(x.shape)
    scale = torch.tensor(1.0 / (1.0 - rate))
    yield "dropout_mask_apply", {"seed": seed, "stream": stream, "step": step,
                                 "rate": repr(rate)}, {"x": x, "dy": dy}, \
        {"mask": keep.to(torch.uint8),
         "out": torch.where(keep, x * scale, torch.zeros(())),
         "dx": torch.where(keep, dy * scale, torch.zeros(()))}

    # softmax_grad from softmax's output
    for name, q, k, causal in (("softmax_grad", 5, 9, 0),
                               ("softmax_grad_causal_rect", 5, 9, 1)):
        x, dy = randn(2, 3, q, k) * 3, randn(2, 3, q, k)

        def fn(x):
            s = x.masked_fill(causal_mask(q, k), float("-inf")) if causal else x
            return torch.softmax(s, dim=-1)
        g = grads(fn, {"x": x}, dy, ["x"])
        yield name, {"kernel": "softmax_grad", "causal": causal}, \
            {"y": fn(x.double()).float(), "dy": dy}, {"dx": g["x"]}

    # attention_grad: GQA, causal, rectangular, several query blocks,
    # dropout; "saved": given the forward's output and log-sum-exps
    # (attention_lse's, here torch's in double), the same gradients
    for name, h, kv, sq, sk, d, dv, causal, rate in (
            ("attention_grad_gqa_causal", 8, 4, 7, 7, 16, 16, 1, 0.0),
            ("attention_grad_gqa_rect", 8, 2, 5, 9, 16, 8, 0, 0.0),
            ("attention_grad_blocks_causal_rect", 4, 2, 150, 170, 16, 8, 1,
             0.0),
            ("attention_grad_dropout_causal", 4, 2, 70, 70, 8, 8, 1, 0.25),
            ("attention_grad_saved_blocks_causal_rect", 4, 2, 150, 170, 16, 8,
             1, 0.0),
            ("attention_grad_saved_dropout_causal", 4, 2, 70, 70, 8, 8, 1,
             0.25)):
        b = 2
        q, k, v = randn(b, h, sq, d), randn(b, kv, sk, d), randn(b, kv, sk, dv)
        dy = randn(b, h, sq, dv)
        scale = 1.0 / math.sqrt(d)
        seed, stream, step = 99, 4, 1
        keep = None
        if rate:
            keep = dropout_keep(seed, stream, step, rate, 0,
                                b * h * sq * sk).reshape(b, h, sq, sk)
        g = grads(lambda q, k, v: attention_ref(q, k, v, scale, causal, keep,
                                                rate),
                  {"q": q, "k": k, "v": v}, dy, ["q", "k", "v"])
        inputs = {"q": q, "k": k, "v": v, "dy": dy}
        if "saved" in name:
            qd, kd, vd = q.double(), k.double(), v.double()
            inputs["out"] = attention_ref(qd, kd, vd, scale, causal, keep,
                                          rate).float()
            s = (qd @ kd.repeat_interleave(h // kv, dim=1)
                 .transpose(-1, -2)) * scale
            if causal:
                s = s.masked_fill(causal_mask(sq, sk), float("-inf"))
            inputs["lse"] = torch.logsumexp(s, dim=-1).float()
        yield name, {"kernel": "attention_grad", "causal": causal,
                     "scale": repr(scale), "seed": seed, "stream": stream,
                     "step": step, "rate": repr(rate)}, inputs, \
            {"dq": g["q"], "dk": g["k"], "dv": g["v"]}

    # rotary's backward is the inverse rotation
    x, dy = randn(2, 4, 9, 16), randn(2, 4, 9, 16)
    theta, offset = 10000.0, 3
    inv_freq = 1.0 / (theta ** (torch.arange(0, 16, 2).float() / 16))
    t = torch.arange(offset, offset + 9).float()
    emb = torch.cat((torch.outer(t, inv_freq),) * 2, dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    g = grads(lambda x: x * cos + rotate_half(x) * sin, {"x": x}, dy, ["x"])
    yield "rotary_inverse", {"kernel": "rotary", "theta": theta,
                             "offset": offset, "inverse": 1}, \
        {"x": dy}, {"out": g["x"]}

    # cross_entropy_grad of the mean loss (scale 1 / count), ignored labels
    logits = randn(3, 10, 50) * 4
    labels = torch.randint(0, 50, (3, 10), dtype=torch.int64)
    labels[torch.rand(3, 10) < 0.3] = -100
    labels[0, 0] = -100
    count = int((labels != -100).sum())
    g = grads(lambda logits, labels: torch.nn.functional.cross_entropy(
        logits.reshape(-1, 50), labels.reshape(-1), ignore_index=-100),
        {"logits": logits, "labels": labels}, torch.tensor(1.0), ["logits"])
    yield "cross_entropy_grad", {"ignore_index": -100,
                                 "scale": repr(1.0 / count)}, \
        {"logits": logits, "labels": labels}, \
        {"dlogits": g["logits"], "count": torch.tensor(count)}

    # pad (slice's backward) and sum_groups (repeat_interleave's)
    x, dy = randn(4, 10, 6), randn(4, 5, 6)
    g = grads(lambda x: x[:, 2:7, :], {"x": x}, dy, ["x"])
    yield "pad", {"dim": 1, "offset": 2, "extent": 10}, {"x": dy}, \
        {"out": g["x"]}
    x, dy = randn(2, 4, 7, 16), randn(2, 12, 7, 16)
    g = grads(lambda x: x.repeat_interleave(3, dim=1), {"x": x}, dy, ["x"])
    yield "sum_groups", {"dim": 1, "repeats": 3}, {"x": dy}, {"out": g["x"]}

    # optimizers over several steps, with global-norm clipping and the lr
    # schedule: torch.optim and torch.nn.utils.clip_grad_norm_
    for name, opt, sched, max_norm in (
            ("adamw_cosine_clip", "adamw", "cosine", 1.0),
            ("adamw_constant", "adamw", "constant", 0.0),
            ("sgd_momentum_clip", "sgd", "constant", 0.5),
            ("sgd_plain_cosine", "sgd", "cosine", 0.0)):
        steps, lr, min_lr, warmup, decay = 7, 1e-2, 1e-3, 2, 5
        shapes = [(10, 4), (7,)]
        params = [torch.nn.Parameter(randn(*sh)) for sh in shapes]
        initial = [p.detach().clone() for p in params]
        all_grads = [randn(steps, *sh) * 3 for sh in shapes]
        if opt == "adamw":
            hyper = {"beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
                     "weight_decay": 0.1}
            optimizer = torch.optim.AdamW(
                params, lr=lr, betas=(hyper["beta1"], hyper["beta2"]),
                eps=hyper["eps"], weight_decay=hyper["weight_decay"])
        else:
            hyper = {"momentum": 0.9 if "momentum" in name else 0.0,
                     "weight_decay": 0.01}
            optimizer = torch.optim.SGD(params, lr=lr, **hyper)

        def factor(epoch):
            # The documented schedule (CpuTrainingKernels.h), 1-based step.
            t = epoch + 1
            if sched == "constant":
                return 1.0
            if t <= warmup:
                return t / warmup
            progress = min(1.0, (t - warmup) / (decay - warmup))
            return (min_lr + (lr - min_lr) * 0.5 *
                    (1 + math.cos(math.pi * progress))) / lr
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        norms, lrs = [], []
        for t in range(steps):
            for p, gr in zip(params, all_grads):
                p.grad = gr[t].clone()
            norm = torch.nn.utils.clip_grad_norm_(
                params, max_norm if max_norm else float("inf"))
            norms.append(float(norm))
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        outputs = {"lrs": torch.tensor(lrs), "norms": torch.tensor(norms)}
        for i, p in enumerate(params):
            outputs[f"p{i}"] = p.detach()
            state = optimizer.state[p]
            if opt == "adamw":
                outputs[f"p{i}.exp_avg"] = state["exp_avg"]
                outputs[f"p{i}.exp_avg_sq"] = state["exp_avg_sq"]
            elif hyper["momentum"]:
                outputs[f"p{i}.momentum"] = state["momentum_buffer"]
        inputs = {}
        for i in range(len(params)):
            inputs[f"p{i}"] = initial[i]
            inputs[f"g{i}"] = all_grads[i]
        meta = dict(hyper, kernel=opt, steps=steps, schedule=sched, lr=lr,
                    min_lr=min_lr, warmup=warmup, decay=decay,
                    max_norm=max_norm, params=len(params))
        yield name, {k: repr(v) if isinstance(v, float) else v
                     for k, v in meta.items()}, inputs, outputs

    labels = torch.randint(0, 50, (3, 10), dtype=torch.int64)
    labels[torch.rand(3, 10) < 0.4] = -100
    yield "count_targets", {"ignore_index": -100}, {"labels": labels}, \
        {"count": (labels != -100).sum().reshape(())}

    # cross_entropy(_grad) over a vocabulary of `vocab` classes padded to the
    # logits' 50 columns, in `blocks` blocks of columns combined as ranks
    # combine them (tpcrt-kernel-check runs a block at a time). The padding
    # columns are large, so that counting them would change everything; the
    # reference is torch's cross-entropy over the real columns alone.
    for vocab, blocks in ((37, 1), (37, 5), (50, 5)):
        logits = randn(3, 10, 50) * 4
        logits[..., vocab:] = 20.0
        labels = torch.randint(0, vocab, (3, 10), dtype=torch.int64)
        labels[torch.rand(3, 10) < 0.3] = -100
        labels[0, 0] = -100
        labels[0, 1] = vocab - 1  # the last real class is a target
        real = logits[..., :vocab]
        count = (labels != -100).sum().reshape(())
        loss = torch.nn.functional.cross_entropy(
            real.reshape(-1, vocab), labels.reshape(-1), ignore_index=-100,
            reduction="sum")
        meta = {"ignore_index": -100, "vocab": vocab, "blocks": blocks}
        suffix = f"vocab{vocab}_blocks{blocks}"
        yield "cross_entropy_" + suffix, dict(meta, kernel="cross_entropy"), \
            {"logits": logits, "labels": labels}, \
            {"loss_sum": loss.reshape(()), "count": count}
        g = grads(lambda logits, labels: torch.nn.functional.cross_entropy(
            logits[..., :vocab].reshape(-1, vocab), labels.reshape(-1),
            ignore_index=-100), {"logits": logits, "labels": labels},
            torch.tensor(1.0), ["logits"])
        yield "cross_entropy_grad_" + suffix, \
            dict(meta, kernel="cross_entropy_grad",
                 scale=repr(1.0 / int(count))), \
            {"logits": logits, "labels": labels}, \
            {"dlogits": g["logits"], "count": count}


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: kernel_reference.py OUTPUT_DIR")
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".safetensors"):
            os.remove(os.path.join(out_dir, old))
    torch.manual_seed(1234)
    n = 0
    for name, meta, inputs, outputs in list(cases()) + list(training_cases()):
        meta = dict(meta)
        meta.setdefault("kernel", name)
        tensors = {"in." + k: v for k, v in inputs.items()}
        tensors.update({"out." + k: v for k, v in outputs.items()})
        write_safetensors(os.path.join(out_dir, name + ".safetensors"),
                          tensors, meta)
        n += 1
    print(f"kernel_reference.py: wrote {n} cases to {out_dir}")


if __name__ == "__main__":
    main()
