"""PyTorch reference models for tpc's end-to-end tests.

GPT-2 and Llama written directly with torch operations (no `transformers`),
following the Hugging Face definitions, so that tpc's output can be compared
with an independent implementation. Parameters use the Hugging Face names and
layouts (GPT-2 Conv1D weights are [in, out], Llama nn.Linear weights are
[out, in]). Also a minimal safetensors reader and writer (Debian ships no
`safetensors` module): the format is an 8-byte little-endian header length, a
JSON header, then the raw little-endian tensor bytes.
"""

import json
import math
import struct

import torch

# ---------------------------------------------------------------------------
# safetensors

_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.uint8: "U8",
}
_TORCH_DTYPES = {name: dtype for dtype, name in _DTYPES.items()}
# torch 1.13 has no uint64: checkpoint counters (step, seeds) are read as the
# int64 with the same bits.
_TORCH_DTYPES["U64"] = torch.int64


def _tensor_bytes(tensor):
    tensor = tensor.detach().contiguous().cpu()
    if tensor.dtype in (torch.bfloat16, torch.float16):
        # numpy has no bfloat16: reinterpret the bits as int16.
        return tensor.view(torch.int16).numpy().tobytes()
    return tensor.numpy().tobytes()


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: tensor} to `path`, tensors in name order."""
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        data = _tensor_bytes(tensor)
        header[name] = {
            "dtype": _DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def read_safetensors(path):
    """Reads a safetensors file into {name: tensor}."""
    with open(path, "rb") as f:
        raw = f.read()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    base = 8 + length
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = _TORCH_DTYPES[entry["dtype"]]
        data = bytearray(raw[base + begin:base + end])
        if dtype in (torch.bfloat16, torch.float16):
            flat = torch.frombuffer(data, dtype=torch.int16).view(dtype)
        else:
            flat = torch.frombuffer(data, dtype=dtype)
        out[name] = flat.reshape(entry["shape"]).clone()
    return out


def write_sharded_safetensors(directory, tensors, num_shards):
    """Writes a sharded checkpoint as Hugging Face does: shard files plus
    model.safetensors.index.json mapping every tensor to its file."""
    names = sorted(tensors)
    per_shard = math.ceil(len(names) / num_shards)
    weight_map = {}
    for shard in range(num_shards):
        file_name = "model-%05d-of-%05d.safetensors" % (shard + 1, num_shards)
        chunk = names[shard * per_shard:(shard + 1) * per_shard]
        write_safetensors(directory + "/" + file_name,
                          {name: tensors[name] for name in chunk})
        for name in chunk:
            weight_map[name] = file_name
    index = {"metadata": {"total_size": sum(
        t.numel() * t.element_size() for t in tensors.values())},
             "weight_map": weight_map}
    path = directory + "/model.safetensors.index.json"
    with open(path, "w") as f:
        json.dump(index, f, indent=2)
    return path


# ---------------------------------------------------------------------------
# Configurations (the fields of a Hugging Face config.json that matter here)


class GPT2Config:
    def __init__(self, raw):
        self.vocab = raw["vocab_size"]
        self.positions = raw.get("n_positions", 1024)
        self.hidden = raw["n_embd"]
        self.layers = raw["n_layer"]
        self.heads = raw["n_head"]
        self.ffn = raw.get("n_inner") or 4 * self.hidden
        activation = raw.get("activation_function", "gelu_new")
        self.gelu_tanh = activation != "gelu"
        self.eps = raw.get("layer_norm_epsilon", 1e-5)
        self.tied = raw.get("tie_word_embeddings", True)


class LlamaConfig:
    def __init__(self, raw):
        self.vocab = raw["vocab_size"]
        self.hidden = raw["hidden_size"]
        self.layers = raw["num_hidden_layers"]
        self.heads = raw["num_attention_heads"]
        self.kv_heads = raw.get("num_key_value_heads", self.heads)
        self.head_dim = raw.get("head_dim") or self.hidden // self.heads
        self.ffn = raw["intermediate_size"]
        self.eps = raw.get("rms_norm_eps", 1e-6)
        self.theta = raw.get("rope_theta", 10000.0)
        self.attention_bias = raw.get("attention_bias", False)
        self.mlp_bias = raw.get("mlp_bias", False)
        self.tied = raw.get("tie_word_embeddings", False)


def load_config(path):
    with open(path) as f:
        raw = json.load(f)
    if raw["model_type"] == "gpt2":
        return GPT2Config(raw)
    if raw["model_type"] == "llama":
        return LlamaConfig(raw)
    raise ValueError("unsupported model_type " + raw["model_type"])


# ---------------------------------------------------------------------------
# Random weights under Hugging Face names


def random_weights(config, seed):
    """Random parameters, scaled so activations stay O(1) and the softmaxes
    are far from uniform (a test that only sees uniform attention would not
    notice a wrong mask). Biases and norm scales are random too, so a swapped
    or ignored one changes the result."""
    gen = torch.Generator().manual_seed(seed)

    def normal(*shape, std=0.02, mean=0.0):
        return (torch.randn(*shape, generator=gen) * std + mean).float()

    w = {}
    h = config.hidden
    if isinstance(config, GPT2Config):
        w["transformer.wte.weight"] = normal(config.vocab, h, std=0.5)
        w["transformer.wpe.weight"] = normal(config.positions, h, std=0.3)
        for i in range(config.layers):
            p = "transformer.h.%d." % i
            w[p + "ln_1.weight"] = normal(h, std=0.1, mean=1.0)
            w[p + "ln_1.bias"] = normal(h, std=0.1)
            w[p + "attn.c_attn.weight"] = normal(h, 3 * h, std=0.3)
            w[p + "attn.c_attn.bias"] = normal(3 * h, std=0.1)
            w[p + "attn.c_proj.weight"] = normal(h, h, std=0.1)
            w[p + "attn.c_proj.bias"] = normal(h, std=0.1)
            w[p + "ln_2.weight"] = normal(h, std=0.1, mean=1.0)
            w[p + "ln_2.bias"] = normal(h, std=0.1)
            w[p + "mlp.c_fc.weight"] = normal(h, config.ffn, std=0.15)
            w[p + "mlp.c_fc.bias"] = normal(config.ffn, std=0.1)
            w[p + "mlp.c_proj.weight"] = normal(config.ffn, h, std=0.08)
            w[p + "mlp.c_proj.bias"] = normal(h, std=0.1)
        w["transformer.ln_f.weight"] = normal(h, std=0.1, mean=1.0)
        w["transformer.ln_f.bias"] = normal(h, std=0.1)
        if not config.tied:
            w["lm_head.weight"] = normal(config.vocab, h, std=0.3)
        return w
    d = config.head_dim
    w["model.embed_tokens.weight"] = normal(config.vocab, h, std=1.0)
    for i in range(config.layers):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = normal(h, std=0.1, mean=1.0)
        w[p + "self_attn.q_proj.weight"] = normal(config.heads * d, h, std=0.3)
        w[p + "self_attn.k_proj.weight"] = normal(config.kv_heads * d, h, std=0.3)
        w[p + "self_attn.v_proj.weight"] = normal(config.kv_heads * d, h, std=0.3)
        w[p + "self_attn.o_proj.weight"] = normal(h, config.heads * d, std=0.1)
        if config.attention_bias:
            w[p + "self_attn.q_proj.bias"] = normal(config.heads * d, std=0.1)
            w[p + "self_attn.k_proj.bias"] = normal(config.kv_heads * d, std=0.1)
            w[p + "self_attn.v_proj.bias"] = normal(config.kv_heads * d, std=0.1)
            w[p + "self_attn.o_proj.bias"] = normal(h, std=0.1)
        w[p + "post_attention_layernorm.weight"] = normal(h, std=0.1, mean=1.0)
        w[p + "mlp.gate_proj.weight"] = normal(config.ffn, h, std=0.15)
        w[p + "mlp.up_proj.weight"] = normal(config.ffn, h, std=0.15)
        w[p + "mlp.down_proj.weight"] = normal(h, config.ffn, std=0.08)
        if config.mlp_bias:
            w[p + "mlp.gate_proj.bias"] = normal(config.ffn, std=0.1)
            w[p + "mlp.up_proj.bias"] = normal(config.ffn, std=0.1)
            w[p + "mlp.down_proj.bias"] = normal(h, std=0.1)
    w["model.norm.weight"] = normal(h, std=0.1, mean=1.0)
    if not config.tied:
        w["lm_head.weight"] = normal(config.vocab, h, std=0.3)
    return w


def random_batch(config, batch, seq, seed, ignored_fraction=0.1):
    """input_ids and labels [batch, seq] (int64); some labels are -100."""
    gen = torch.Generator().manual_seed(seed + 1)
    ids = torch.randint(0, config.vocab, (batch, seq), generator=gen)
    labels = torch.randint(0, config.vocab, (batch, seq), generator=gen)
    ignored = torch.rand(batch, seq, generator=gen) < ignored_fraction
    labels[ignored] = -100
    return {"input_ids": ids, "labels": labels}


# ---------------------------------------------------------------------------
# Forward passes (no dropout)


def _causal_attention(q, k, v):
    """q [b, heads, s, d], k/v [b, heads, s, d] -> [b, heads, s, d]."""
    s = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def gpt2_forward(config, w, ids):
    b, s = ids.shape
    h, heads = config.hidden, config.heads
    d = h // heads
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:s]
    for i in range(config.layers):
        p = "transformer.h.%d." % i
        y = torch.nn.functional.layer_norm(x, (h,), w[p + "ln_1.weight"],
                                           w[p + "ln_1.bias"], config.eps)
        qkv = y @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(h, dim=-1)
        q, k, v = (t.reshape(b, s, heads, d).transpose(1, 2) for t in (q, k, v))
        o = _causal_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = x + o @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        y = torch.nn.functional.layer_norm(x, (h,), w[p + "ln_2.weight"],
                                           w[p + "ln_2.bias"], config.eps)
        y = y @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"]
        y = torch.nn.functional.gelu(
            y, approximate="tanh" if config.gelu_tanh else "none")
        x = x + y @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = torch.nn.functional.layer_norm(x, (h,), w["transformer.ln_f.weight"],
                                       w["transformer.ln_f.bias"], config.eps)
    head = w["transformer.wte.weight"] if config.tied else w["lm_head.weight"]
    return x @ head.T


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _rms_norm(x, weight, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def llama_forward(config, w, ids):
    b, s = ids.shape
    h, heads, kv, d = config.hidden, config.heads, config.kv_heads, config.head_dim
    dtype = w["model.embed_tokens.weight"].dtype
    inv_freq = 1.0 / (config.theta ** (
        torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.outer(torch.arange(s, dtype=torch.float64), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    cos, sin = angles.cos().to(dtype), angles.sin().to(dtype)

    def project(x, name):
        y = x @ w[name + ".weight"].T
        if name + ".bias" in w:
            y = y + w[name + ".bias"]
        return y

    x = w["model.embed_tokens.weight"][ids]
    for i in range(config.layers):
        p = "model.layers.%d." % i
        y = _rms_norm(x, w[p + "input_layernorm.weight"], config.eps)
        q = project(y, p + "self_attn.q_proj").reshape(b, s, heads, d).transpose(1, 2)
        k = project(y, p + "self_attn.k_proj").reshape(b, s, kv, d).transpose(1, 2)
        v = project(y, p + "self_attn.v_proj").reshape(b, s, kv, d).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        k = k.repeat_interleave(heads // kv, dim=1)
        v = v.repeat_interleave(heads // kv, dim=1)
        o = _causal_attention(q, k, v).transpose(1, 2).reshape(b, s, heads * d)
        x = x + project(o, p + "self_attn.o_proj")
        y = _rms_norm(x, w[p + "post_attention_layernorm.weight"], config.eps)
        gate = torch.nn.functional.silu(project(y, p + "mlp.gate_proj"))
        x = x + project(gate * project(y, p + "mlp.up_proj"), p + "mlp.down_proj")
    x = _rms_norm(x, w["model.norm.weight"], config.eps)
    head = w["model.embed_tokens.weight"] if config.tied else w["lm_head.weight"]
    return x @ head.T


def forward(config, weights, ids):
    if isinstance(config, GPT2Config):
        return gpt2_forward(config, weights, ids)
    return llama_forward(config, weights, ids)


def loss_of(logits, labels):
    """Mean cross-entropy over the targets that are not -100."""
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
        ignore_index=-100, reduction="mean")


def relative_error(actual, expected):
    """‖a − b‖ / ‖b‖ over the whole tensor (INTERFACE.md's equality)."""
    actual = actual.double()
    expected = expected.double()
    norm = expected.norm().item()
    diff = (actual - expected).norm().item()
    return diff / norm if norm > 0 else diff


# ---------------------------------------------------------------------------
# Training references (float64 autograd and torch.optim)


def uneven_labels(labels, microbatches):
    """Ignores (-100) a different share of the targets in each microbatch:
    none in the last, more in the earlier ones, so that a per-microbatch mean
    would weigh them wrongly and only the global mean is right."""
    labels = labels.clone()
    rows = labels.shape[0] // microbatches
    for m in range(microbatches - 1):
        block = labels[m * rows:(m + 1) * rows]
        ignored = block.numel() * (microbatches - 1 - m) // (2 * microbatches)
        block.view(-1)[:ignored] = -100
    return labels


def gradients(config, weights, batch):
    """Loss and d loss / d parameter (mean over the non-ignored targets of
    the whole batch), in float64."""
    params = {name: t.detach().double().requires_grad_(True)
              for name, t in weights.items()}
    loss = loss_of(forward(config, params, batch["input_ids"]), batch["labels"])
    loss.backward()
    return loss.item(), {name: p.grad for name, p in params.items()}


def lr_at(step, lr, schedule, warmup, total, min_lr):
    """The learning rate of 1-based step `step`: constant, or linear warm-up
    over `warmup` steps then cosine decay to `min_lr` at step `total`."""
    if schedule == "constant":
        return lr
    if step <= warmup:
        return lr * step / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def train_reference(config, weights, batch, steps, optimizer="adamw", lr=1e-3,
                    betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                    momentum=0.0, schedule="constant", warmup=0, min_lr=0.0,
                    grad_clip=0.0, decay_exclude=()):
    """Losses of `steps` optimizer steps on one fixed batch (the loss of step
    k is computed before update k), with torch.optim in float64. AdamW skips
    weight decay for parameters whose name contains a `decay_exclude` string;
    grad_clip > 0 clips the global norm (torch.nn.utils.clip_grad_norm_)."""
    params = {name: t.detach().double().requires_grad_(True)
              for name, t in weights.items()}
    ordered = [params[name] for name in sorted(params)]
    if optimizer == "adamw":
        excluded = [name for name in sorted(params)
                    if any(pattern in name for pattern in decay_exclude)]
        groups = [{"params": [params[n] for n in sorted(params) if n not in excluded]},
                  {"params": [params[n] for n in excluded], "weight_decay": 0.0}]
        opt = torch.optim.AdamW([g for g in groups if g["params"]], lr=lr, betas=betas,
                                eps=eps, weight_decay=weight_decay)
    else:
        opt = torch.optim.SGD(ordered, lr=lr, momentum=momentum)
    losses = []
    for step in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, lr, schedule, warmup, steps, min_lr)
        opt.zero_grad()
        loss = loss_of(forward(config, params, batch["input_ids"]), batch["labels"])
        loss.backward()
        losses.append(loss.item())
        if grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(ordered, grad_clip)
        opt.step()
    return losses
