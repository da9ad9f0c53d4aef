#!/usr/bin/env python3
"""The MFU reference: a GPT-2 training step in PyTorch on one GPU.

    gpt_step_torch.py [--batch 8] [--seq 2048] [--hidden 2048] [--heads 16]
                      [--layers 8] [--vocab 50257] [--dropout 0.1]
                      [--warmup 3] [--steps 5] [--impl auto|hf|plain]

The model test/gpu/prepare.sh compiles for tpc (gpu-carry/models/
gpt2-mfu.tpcx): Hugging Face's GPT2LMHeadModel (transformers, with
attn_implementation="sdpa") built from a GPT2Config of that size, dropout
everywhere (embd, attn, resid), fp32 master weights under bf16 autocast,
torch.optim.AdamW(fused=True), labels = input_ids (HF shifts them), random
tokens. Without transformers (--impl auto), or with --impl plain, the same
model written out here (pre-norm blocks, F.scaled_dot_product_attention
with dropout, tanh GELU, tied head), reported as "plain". Times --steps
steps after --warmup with CUDA events and prints one JSON line: the mean
step time, tokens/s and the MFU of benchmarks/cuda/report.py. Without a
CUDA device: exit 77.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import cuda_torch, mfu  # noqa: E402


def hf_model(torch, a):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(
        vocab_size=a.vocab, n_positions=a.seq, n_embd=a.hidden,
        n_layer=a.layers, n_head=a.heads, activation_function="gelu_new",
        resid_pdrop=a.dropout, embd_pdrop=a.dropout, attn_pdrop=a.dropout,
        layer_norm_epsilon=1e-5, use_cache=False)
    with torch.device("cuda"):
        try:
            model = GPT2LMHeadModel._from_config(
                config, attn_implementation="sdpa")
        except TypeError:  # an older _from_config without these arguments
            config._attn_implementation = "sdpa"
            model = GPT2LMHeadModel(config)
    impl = getattr(model.config, "_attn_implementation", "?")
    import transformers
    return model, f"hf GPT2LMHeadModel (transformers {transformers.__version__}, attn {impl})"


def plain_model(torch, a):
    import torch.nn as nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            h = a.hidden
            self.ln_1, self.ln_2 = nn.LayerNorm(h), nn.LayerNorm(h)
            self.c_attn, self.c_proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
            self.c_fc, self.mlp_proj = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)
            self.drop = nn.Dropout(a.dropout)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
            q, k, v = (t.view(b, s, a.heads, h // a.heads).transpose(1, 2)
                       for t in (q, k, v))
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=True,
                dropout_p=a.dropout if self.training else 0.0)
            y = y.transpose(1, 2).reshape(b, s, h)
            x = x + self.drop(self.c_proj(y))
            m = self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)),
                                     approximate="tanh"))
            return x + self.drop(m)

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(a.vocab, a.hidden)
            self.wpe = nn.Embedding(a.seq, a.hidden)
            self.drop = nn.Dropout(a.dropout)
            self.h = nn.ModuleList(Block() for _ in range(a.layers))
            self.ln_f = nn.LayerNorm(a.hidden)

        def forward(self, ids, labels):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.drop(self.wte(ids) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)
            return F.cross_entropy(logits[:, :-1].float().flatten(0, 1),
                                   labels[:, 1:].flatten())

    with torch.device("cuda"):
        model = Gpt()
    return model, "plain PyTorch GPT-2 (F.scaled_dot_product_attention)"


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in (("batch", 8), ("seq", 2048), ("hidden", 2048),
                          ("heads", 16), ("layers", 8), ("vocab", 50257),
                          ("warmup", 3), ("steps", 5)):
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--impl", choices=("auto", "hf", "plain"), default="auto")
    a = p.parse_args(argv)
    torch = cuda_torch()
    if torch is None:
        return 77
    torch.manual_seed(0)
    why = ""
    if a.impl in ("auto", "hf"):
        try:
            result = measure(torch, a, hf=True)
        except Exception as error:  # no transformers, or an API change
            if a.impl == "hf":
                raise
            why = f" (transformers unusable: {type(error).__name__}: {error})"
            torch.cuda.empty_cache()
    if a.impl == "plain" or why:
        result = measure(torch, a, hf=False)
        result["impl"] += why
    print(json.dumps(result), flush=True)
    return 0


def measure(torch, a, hf):
    """The timed steps of one implementation, as the JSON line's dict."""
    model, impl = hf_model(torch, a) if hf else plain_model(torch, a)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=a.lr,
                                  weight_decay=0.01, fused=True)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = (model(input_ids=ids, labels=ids).loss if hf
                    else model(ids, ids))
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(a.steps):
        loss = step()
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / a.steps
    params = sum(t.numel() for t in model.parameters())
    return {
        "tool": "torch", "kind": "gpt_step", "impl": impl,
        "batch": a.batch, "seq": a.seq, "hidden": a.hidden,
        "heads": a.heads, "layers": a.layers, "vocab": a.vocab,
        "dropout": a.dropout, "params": params, "steps_timed": a.steps,
        "timing": "CUDA events around the timed steps",
        "step_ms": seconds * 1e3, "tokens_per_s": a.batch * a.seq / seconds,
        "mfu": mfu(seconds, a.batch, a.seq, a.hidden, a.layers, a.vocab),
        "loss": float(loss),
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2 ** 30,
        "torch_version": torch.__version__}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
