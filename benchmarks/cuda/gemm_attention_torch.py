#!/usr/bin/env python3
"""PyTorch's side of tpc-cuda-bench: the same cases, the same JSON keys.

    gemm_attention_torch.py [--iters N] [--warmup W] CASE...

    gemm:M,K,N[,in_out|out_in]   bf16 [M, K] times in_out [K, N]
                                 (torch.matmul(A, B)) or out_in [N, K]
                                 (F.linear(A, W), A @ W^T); 2·M·N·K FLOPs
    attn:B,H,S,D[,KV][,causal|full][,dropout]
                                 F.scaled_dot_product_attention on bf16
                                 q [B, H, S, D], k, v [B, KV, S, D], scale
                                 1/sqrt(D); 4·B·H·S²·D FLOPs, half when
                                 causal (FlashAttention's count);
                                 `dropout`: dropout_p 0.1
    attn_grad:B,H,S,D[,KV][,causal|full][,dropout][,recompute]
                                 the same SDPA's backward: dq, dk, dv of
                                 a random dO (torch.autograd.grad on a
                                 forward kept for it); FlashAttention's
                                 count, 2.5 times the forward's
                                 (`recompute` names tpc-cuda-bench's
                                 other form of the case; torch's is the
                                 same)

Random data in [-1, 1) (zeros run faster: less power). After W warm-up
calls (default 3), N calls (default 20) are timed with a CUDA event pair
each, back to back: the mean (and the fastest) in milliseconds, TFLOP/s from
the mean. Attention is timed with PyTorch's own choice of SDPA backend
("torch"), and for each backend that accepts the case under
torch.nn.attention.sdpa_kernel ("backends": FLASH_ATTENTION,
CUDNN_ATTENTION, EFFICIENT_ATTENTION), so a comparison can name the best.
One JSON line per case on stdout. Without a CUDA device: exit 77.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import cuda_torch  # noqa: E402


# An attention case's dropout_p with `dropout`: the MFU model's attn_pdrop.
BENCH_DROPOUT = 0.1


def parse_case(text):
    kind, _, rest = text.partition(":")
    parts = rest.split(",")
    if kind == "gemm":
        if not 3 <= len(parts) <= 4:
            raise ValueError(f"case '{text}': gemm:M,K,N[,layout]")
        m, k, n = (int(p) for p in parts[:3])
        layout = parts[3] if len(parts) == 4 else "in_out"
        if layout not in ("in_out", "out_in"):
            raise ValueError(f"case '{text}': layout is in_out or out_in")
        return {"kind": "gemm", "case": text, "m": m, "k": k, "n": n,
                "layout": layout}
    if kind not in ("attn", "attn_grad"):
        raise ValueError(
            f"case '{text}': expected gemm:..., attn:... or attn_grad:...")
    causal, dropout = True, 0.0
    # The options after the sizes, in any order (tpc-cuda-bench's).
    while parts and (parts[-1] in ("causal", "full", "dropout") or
                     (kind == "attn_grad" and parts[-1] == "recompute")):
        option = parts.pop()
        if option in ("causal", "full"):
            causal = option == "causal"
        elif option == "dropout":
            dropout = BENCH_DROPOUT
    if not 4 <= len(parts) <= 5:
        raise ValueError(
            f"case '{text}': {kind}:B,H,S,D[,KV][,causal|full][,dropout]")
    b, h, s, d = (int(p) for p in parts[:4])
    kv = int(parts[4]) if len(parts) == 5 else h
    return {"kind": kind, "case": text, "b": b, "h": h, "kv": kv, "s": s,
            "d": d, "causal": causal, "dropout": dropout}


def flops(c):
    if c["kind"] == "gemm":
        return 2.0 * c["m"] * c["n"] * c["k"]
    full = 4.0 * c["b"] * c["h"] * c["s"] ** 2 * c["d"]
    forward = full / 2 if c["causal"] else full
    return 2.5 * forward if c["kind"] == "attn_grad" else forward


def time_calls(torch, fn, warmup, iters):
    """(mean ms, fastest ms) of `iters` calls after `warmup`."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(iters + 1)]
    events[0].record()
    for i in range(iters):
        fn()
        events[i + 1].record()
    torch.cuda.synchronize()
    times = [events[i].elapsed_time(events[i + 1]) for i in range(iters)]
    return sum(times) / iters, min(times)


def run_case(torch, c, warmup, iters):
    import torch.nn.functional as F
    gen = torch.Generator(device="cuda").manual_seed(1)

    def rand(*shape):
        x = torch.rand(*shape, device="cuda", generator=gen) * 2 - 1
        return x.to(torch.bfloat16)

    result = dict(c, tool="torch", dtype="bf16", device="cuda",
                  warmup=warmup, iters=iters, flop=flops(c),
                  torch_version=torch.__version__)
    if c["kind"] == "gemm":
        a = rand(c["m"], c["k"])
        if c["layout"] == "in_out":
            b = rand(c["k"], c["n"])
            fn = lambda: torch.matmul(a, b)  # noqa: E731
        else:
            w = rand(c["n"], c["k"])
            fn = lambda: F.linear(a, w)  # noqa: E731
        ms, ms_min = time_calls(torch, fn, warmup, iters)
    else:
        grad = c["kind"] == "attn_grad"
        q = rand(c["b"], c["h"], c["s"], c["d"]).requires_grad_(grad)
        k = rand(c["b"], c["kv"], c["s"], c["d"]).requires_grad_(grad)
        v = rand(c["b"], c["kv"], c["s"], c["d"]).requires_grad_(grad)
        kwargs = {"is_causal": c["causal"], "scale": 1 / math.sqrt(c["d"]),
                  "dropout_p": c["dropout"]}
        if c["kv"] != c["h"]:
            kwargs["enable_gqa"] = True

        def forward():
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

        if grad:
            d_out = rand(c["b"], c["h"], c["s"], c["d"])

            def make_fn():
                # One forward (under the backend chosen by the caller's
                # context), then only its backward is timed.
                out = forward()
                return lambda: torch.autograd.grad(  # noqa: E731
                    out, (q, k, v), d_out, retain_graph=True)
        else:
            def make_fn():
                return forward
        fn = make_fn()
        ms, ms_min = time_calls(torch, fn, warmup, iters)
        backends = {}
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION",
                         "EFFICIENT_ATTENTION"):
                backend = getattr(SDPBackend, name, None)
                if backend is None:
                    continue
                try:
                    with sdpa_kernel(backend):
                        b_ms, _ = time_calls(torch, make_fn(), warmup, iters)
                    backends[name] = flops(c) / (b_ms * 1e-3) / 1e12
                except RuntimeError as error:  # the backend refused the case
                    backends[name] = f"refused: {str(error).splitlines()[0][:120]}"
        except ImportError:
            pass
        result["backends_tflops"] = backends
    result.update(ms=ms, ms_min=ms_min, tflops=flops(c) / (ms * 1e-3) / 1e12)
    return result


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("cases", nargs="+")
    args = parser.parse_args(argv)
    try:
        cases = [parse_case(text) for text in args.cases]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    torch = cuda_torch()
    if torch is None:
        return 77
    for c in cases:
        print(json.dumps(run_case(torch, c, args.warmup, args.iters)),
              flush=True)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
