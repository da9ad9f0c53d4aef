#!/usr/bin/python3
"""tpc-run on the tiny model against PyTorch.

tiny_reference.py DIR: DIR holds the files of tpcrt-write-fixtures and
out.safetensors, what `tpc-run tiny-nodrop.tpcx --weights weights.safetensors
--inputs inputs.safetensors --dump-outputs out.safetensors` wrote. Computes the
same model (TestExecutables.h, tinyModel without dropout) in float64 with
torch from the same weights and batch, and requires the loss and the logits
to agree within a relative error of 1e-5 (norm-wise, as INTERFACE.md defines
equality): one forward of a one-block model of hidden 8 and vocabulary 16,
every sum of at most 32 terms (gamma_32 = 32 u = 1.9e-6 at worst per sum, a
chain of five; docs/testing/tolerances.md).
"""

import json
import struct
import sys

import torch

# U64 (checkpoint counters) is read as int64: torch 1.13 has no uint64.
DTYPES = {"F32": torch.float32, "F64": torch.float64, "I64": torch.int64,
          "I32": torch.int32, "BF16": torch.bfloat16, "F16": torch.float16,
          "U64": torch.int64, "U8": torch.uint8}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        dtype = DTYPES[entry["dtype"]]
        if dtype in (torch.bfloat16, torch.float16):
            t = torch.frombuffer(raw, dtype=torch.int16).view(dtype)
        else:
            t = torch.frombuffer(raw, dtype=dtype)
        tensors[name] = t.reshape(entry["shape"]).clone()
    return tensors


def rel_err(actual, expected):
    actual = actual.double()
    return ((actual - expected).norm() / expected.norm()).item()


def main():
    d = sys.argv[1]
    w = {k: v.double() for k, v in
         read_safetensors(d + "/weights.safetensors").items()}
    batch = read_safetensors(d + "/inputs.safetensors")
    out = read_safetensors(d + "/out.safetensors")
    ids = batch["input_ids"].long()
    labels = batch["labels"].long()
    seq = ids.shape[1]
    hidden = w["wte.weight"].shape[1]

    x = w["wte.weight"][ids] + w["wpe.weight"][:seq]
    h = torch.nn.functional.layer_norm(x, (hidden,), w["ln_f.weight"],
                                       w["ln_f.bias"], 1e-5)
    h = h @ w["h.0.mlp.c_fc.weight"] + w["h.0.mlp.c_fc.bias"]
    h = torch.nn.functional.gelu(h, approximate="tanh")
    h = h @ w["h.0.mlp.c_proj.weight"] + w["h.0.mlp.c_proj.bias"]
    logits = (x + h) @ w["wte.weight"].T
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
        ignore_index=-100)

    errors = {"loss": rel_err(out["loss"], loss),
              "logits": rel_err(out["logits"], logits)}
    ok = all(e <= 1e-5 for e in errors.values())
    print(f"tpc-run loss {out['loss'].item():.6f} torch {loss.item():.6f}; "
          f"relative error loss {errors['loss']:.3e} "
          f"logits {errors['logits']:.3e}: {'ok' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
