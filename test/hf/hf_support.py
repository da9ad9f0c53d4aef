"""What the Hugging Face round-trip tests share (issue 15).

Each test builds a tiny model with `transformers` (seeded), writes it with
`save_pretrained`, loads it back with `AutoModelForCausalLM.from_pretrained`
(the reference is the model read from the very files tpc reads), runs the
files through tpc-import -> tpc-compile -> tpc-run and compares with the
Hugging Face model class in eval mode.

References. Hugging Face's float32 model (eager attention) is the model
under test; an exact reference is the same model class in float64. HF 4.45
forces float32 in four places even when the model is float64 (RMSNorm's
upcast, the rotary angles and cos/sin, the eager attention's softmax and the
logits' `.float()`), so `exact_float64` evaluates a float64 copy with those
four evaluated in float64 instead, and computes the logits with the model's
own lm_head and the loss with HF's formula (shift by one inside the model,
mean cross-entropy over the targets that are not -100). That the patches
change nothing but the precision is checked every time: the patched float64
model and the unpatched one (which rounds to float32 at those places) agree
within 1e-5 (`REFERENCE_AGREEMENT`: a few float32 roundings per layer,
measured ~1e-7).

Tolerances (docs/testing/tolerances.md, rule 1, through
test/e2e/tolerances.py): tpc computes in float32; its loss, logits and
gradients against the exact reference may be off by
8 * max(HF float32's own error on the same weights and batch, 4u); against
HF's float32 model (two float32 evaluations) by twice that.

Exit status convention: 0 equal, 1 a difference or a tool failure, 77
skipped (no transformers, a model_type tpc-import does not support yet, a
tpc-run feature that does not exist yet): reported skipped, never passed.
"""

import argparse
import copy
import math
import os
import re
import subprocess
import sys

SKIP = 77

try:
    import torch
except ImportError:
    print("torch is not importable by %s: skipped" % sys.executable)
    sys.exit(SKIP)
try:
    import transformers
except ImportError:
    print("transformers is not importable by %s (scripts/setup.sh installs it "
          "into build/hf-venv; it needs PyPI): skipped" % sys.executable)
    sys.exit(SKIP)

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "..", "e2e"))
import e2e_support  # noqa: E402
import tolerances  # noqa: E402
import tpc_torch  # noqa: E402

U32 = tolerances.U32
BATCH, SEQ = 4, 16
# The patched float64 reference against HF's own float64 model, which still
# rounds to float32 at RMSNorm, the rotary angles, the softmax and the
# logits: a few float32 roundings per layer (~1e-7 measured), so 1e-5 only
# fails when a patch changes the mathematics (a wrong rotary layout, a
# dropped norm weight).
REFERENCE_AGREEMENT = 1e-5
# The yardstick is float32's error; one larger than this means the float64
# reference itself is broken (it would make every tolerance loose).
YARDSTICK_CAP = 1e-4

# Small sizes in which no two dimensions coincide (a transposed or swapped
# weight cannot pass by accident): hidden 48, 6 heads, 2 kv-heads,
# head_dim 10 where the family allows it (q: 60, kv: 20, so o_proj is not
# square; Qwen2 4.45 derives head_dim = hidden / heads = 8), intermediate 80,
# vocabulary 112 (56 per rank under tp = 2, not 48), 3 layers, 32 positions,
# sequence 16, batch 4.
COMMON = dict(vocab_size=112, hidden_size=48, num_attention_heads=6,
              num_key_value_heads=2, intermediate_size=80, num_hidden_layers=3,
              max_position_embeddings=32, rms_norm_eps=1e-6, rope_theta=10000.0,
              bos_token_id=1, eos_token_id=2)


def _families():
    return {
        "gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel,
                 dict(vocab_size=112, n_embd=48, n_head=6, n_inner=80, n_layer=3,
                      n_positions=32, bos_token_id=0, eos_token_id=0)),
        "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM,
                  dict(COMMON, head_dim=10)),
        # Qwen2: q/k/v biases, no o_proj bias; tied embeddings as the small
        # published Qwen2 models (0.5B, 1.5B) have.
        "qwen2": (transformers.Qwen2Config, transformers.Qwen2ForCausalLM,
                  dict(COMMON, tie_word_embeddings=True, use_sliding_window=False)),
        # Mistral: Llama's layer with a sliding window (HF's default 4096, far
        # above the sequence, as in the published configs).
        "mistral": (transformers.MistralConfig, transformers.MistralForCausalLM,
                    dict(COMMON, head_dim=10)),
        # rope_scaling (Llama 3.1/3.2 configs carry llama3): linear divides
        # every frequency; llama3's thresholds (original 128 positions, low
        # 1, high 8: wavelengths 16 and 128) put head_dim 10's five
        # frequencies (theta 5e5: wavelengths 6.3, 87, 1185, ...) in all
        # three bands: kept, blended, divided.
        "llama-rope-linear": (transformers.LlamaConfig,
                              transformers.LlamaForCausalLM,
                              dict(COMMON, head_dim=10, rope_theta=5e5,
                                   rope_scaling={"type": "linear",
                                                 "factor": 2.5})),
        "llama-rope-llama3": (transformers.LlamaConfig,
                              transformers.LlamaForCausalLM,
                              dict(COMMON, head_dim=10, rope_theta=5e5,
                                   max_position_embeddings=128,
                                   rope_scaling={
                                       "rope_type": "llama3", "factor": 8.0,
                                       "low_freq_factor": 1.0,
                                       "high_freq_factor": 8.0,
                                       "original_max_position_embeddings": 128})),
    }


FAMILIES = _families()
# Families whose model_type tpc-import is still being taught: a refusal of
# the model_type skips their tests (77, with the reason). For the others
# (every family today) a refusal is a failure.
PENDING_FAMILIES = set()


def parse_args(description, extra=None):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--family", required=True, choices=sorted(FAMILIES))
    if extra:
        extra(parser)
    return parser.parse_args()


class Report:
    """Counts failures; every check prints one line."""

    def __init__(self):
        self.failures = 0

    def __call__(self, ok, message):
        print(("ok " if ok else "FAIL ") + message, flush=True)
        self.failures += 0 if ok else 1

    def close(self, error, tolerance, what):
        """One relative error against its tolerance."""
        self(error <= tolerance, "%s: relative error %.3e (tolerance %.2e)"
             % (what, error, tolerance))
        return error

    def status(self):
        return 1 if self.failures else 0


# ---------------------------------------------------------------------------
# The tools


class Tools:
    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self._help = None

    def path(self, name):
        return os.path.join(self.bin_dir, name)

    def run(self, cmd):
        """Runs a tool, echoing its output; exits with status 1 if it fails."""
        return e2e_support.run([self.path(cmd[0])] + list(cmd[1:]))

    def tpc_import(self, config_path, out, flags, family):
        """tpc-import; a model_type it does not support yet skips the test
        when the family is pending (PENDING_FAMILIES), any other failure
        fails it."""
        cmd = [self.path("tpc-import"), config_path, "-o", out] + flags
        print("+ " + " ".join(cmd), flush=True)
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        if result.returncode == 0:
            return
        if family in PENDING_FAMILIES and \
                re.search(r"model_type:.*(unsupported|not supported)", result.stderr):
            print("skipped: tpc-import does not support this model_type yet (%s)"
                  % result.stderr.strip().splitlines()[-1])
            sys.exit(SKIP)
        print("FAIL: tpc-import exited with status %d" % result.returncode)
        sys.exit(1)

    def run_help(self):
        if self._help is None:
            self._help = subprocess.run([self.path("tpc-run"), "--help"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True).stdout
        return self._help

    def flag_help(self, flag):
        """The text tpc-run --help gives `flag` (its line and the indented
        lines that continue it), or '' if it has no such flag."""
        lines = self.run_help().splitlines()
        for i, line in enumerate(lines):
            if re.match(r"\s*%s\b" % re.escape(flag), line):
                block = [line]
                for more in lines[i + 1:]:
                    if re.match(r"\s*--", more) or not more.startswith("   "):
                        break
                    block.append(more)
                return "\n".join(block)
        return ""

    def unshifted_labels(self):
        """Whether tpc-run takes labels aligned with input_ids, as Hugging
        Face does (`--labels unshifted`); else labels are pre-shifted."""
        return "unshifted" in self.flag_help("--labels")

    def weights_args(self, model_dir):
        """--weights for a save_pretrained directory: the directory itself
        once tpc-run takes one, else its model.safetensors."""
        if re.search(r"director", self.flag_help("--weights")):
            return ["--weights", model_dir]
        return ["--weights", os.path.join(model_dir, "model.safetensors")]

    def checkpoint_directories(self):
        """Whether tpc-run --save-checkpoint writes a directory (a Hugging
        Face checkpoint that from_pretrained reads)."""
        return bool(re.search(r"director", self.flag_help("--save-checkpoint")))


# ---------------------------------------------------------------------------
# Models and batches


def randomize(model, seed):
    """Seeded values for every parameter, at scales that keep activations
    O(1) while the softmaxes are far from uniform (a test that only sees
    uniform attention would not notice a wrong mask or rotary): embeddings
    N(0, 0.5), projections N(0, 1.2^2 / fan_in) (attention scores of std ~2),
    norm scales N(1, 0.1), biases N(0, 0.1), so that a swapped or ignored
    norm or bias changes the result. Tied weights are drawn once."""
    gen = torch.Generator().manual_seed(seed)
    conv1d = transformers.pytorch_utils.Conv1D
    seen = set()
    with torch.no_grad():
        for module_name, module in model.named_modules():
            for name, p in module.named_parameters(recurse=False):
                if id(p) in seen:
                    continue
                seen.add(id(p))
                if isinstance(module, torch.nn.Embedding):
                    std, mean = 0.5, 0.0
                elif p.dim() == 1:
                    std, mean = 0.1, (0.0 if name == "bias" else 1.0)
                elif isinstance(module, torch.nn.Linear):
                    std, mean = 1.2 / math.sqrt(p.shape[1]), 0.0
                elif isinstance(module, conv1d):  # GPT-2: [in, out]
                    std, mean = 1.2 / math.sqrt(p.shape[0]), 0.0
                else:
                    raise ValueError("no initialization for %s.%s" % (module_name, name))
                p.copy_(torch.randn(p.shape, generator=gen) * std + mean)


def build_and_save(family, directory, seed):
    """A tiny model of `family`, seeded, written with save_pretrained to
    `directory`, and read back with AutoModelForCausalLM.from_pretrained as a
    float32 model in eval mode (eager attention). Returns the model read."""
    config_class, model_class, fields = FAMILIES[family]
    torch.manual_seed(seed)
    config = config_class(**fields)
    model = model_class(config)
    randomize(model, seed)
    model.save_pretrained(directory, safe_serialization=True)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        directory, torch_dtype=torch.float32, attn_implementation="eager")
    if type(loaded) is not model_class:
        print("FAIL: from_pretrained gave %s, expected %s"
              % (type(loaded).__name__, model_class.__name__))
        sys.exit(1)
    for (name, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        if not torch.equal(a, b):
            print("FAIL: %s changed through save_pretrained/from_pretrained" % name)
            sys.exit(1)
    loaded.eval()
    return loaded


def make_batch(vocab, seed):
    """input_ids [BATCH, SEQ] and Hugging Face labels aligned with them
    (`labels=input_ids`, as causal LM training passes them), some set to -100
    (ignored), at least one in every row but the last."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (BATCH, SEQ), generator=gen)
    labels = ids.clone()
    ignored = torch.rand(BATCH, SEQ, generator=gen) < 0.1
    for row in range(BATCH - 1):
        ignored[row, 3 + 2 * row] = True
    labels[ignored] = -100
    return ids, labels


def tpc_batch(ids, hf_labels, unshifted):
    """The tensors for tpc-run --inputs. Hugging Face shifts the labels
    inside the model (position i is scored on labels[i + 1]); tpc-run reads
    them pre-shifted (labels[i] is the target of position i) unless it takes
    `--labels unshifted`: then the HF labels go in as they are."""
    if unshifted:
        return {"input_ids": ids, "labels": hf_labels}
    shifted = torch.full_like(hf_labels, -100)
    shifted[:, :-1] = hf_labels[:, 1:]
    return {"input_ids": ids, "labels": shifted}


def label_args(unshifted):
    return ["--labels", "unshifted"] if unshifted else []


# ---------------------------------------------------------------------------
# References


def hf_causal_loss(logits, labels):
    """Hugging Face's causal LM loss (LlamaForCausalLM.forward and the
    others): logits of position i against labels[i + 1], mean cross-entropy
    over the targets that are not -100."""
    vocab = logits.shape[-1]
    return torch.nn.functional.cross_entropy(
        logits[:, :-1, :].reshape(-1, vocab), labels[:, 1:].reshape(-1),
        ignore_index=-100)


def parameters(model):
    """name -> parameter, tied ones once (the names tpc dumps)."""
    return dict(model.named_parameters())


def hf_float32(model, ids, labels, gradients):
    """Hugging Face's own float32 forward (and backward): its loss (with
    labels=..., shifted inside the model), logits and gradients."""
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(gradients):
        out = model(input_ids=ids, labels=labels)
        if gradients:
            out.loss.backward()
    result = dict(loss=out.loss.detach(), logits=out.logits.detach())
    if gradients:
        result["grads"] = {n: p.grad.detach().clone() for n, p in parameters(model).items()}
    return result


class _Float64Softmax:
    """Within the context, softmax(x, dtype=float32) of a float64 x stays
    float64 (HF's eager attention asks for float32 whatever the model's
    dtype)."""

    def __enter__(self):
        self.original = torch.nn.functional.softmax
        original = self.original

        def softmax(input, dim=None, _stacklevel=3, dtype=None):
            if input.dtype == torch.float64:
                dtype = None
            return original(input, dim=dim, _stacklevel=_stacklevel, dtype=dtype)

        torch.nn.functional.softmax = softmax

    def __exit__(self, *exc):
        torch.nn.functional.softmax = self.original


def _patch_float64(model):
    """RMSNorm and the rotary embedding of a float64 copy computed in
    float64 (HF 4.45 computes both in float32 and casts back)."""
    theta = getattr(model.config, "rope_theta", None)
    # With rope_scaling the frequencies are HF's own (its float32 init, kept
    # in the module's buffer, exact in float64); the angles from them on are
    # float64.
    scaling_type = (getattr(model.config, "rope_scaling", None) or {})
    scaled = scaling_type.get("rope_type", scaling_type.get("type", "default")) \
        != "default"
    for module in model.modules():
        kind = type(module).__name__
        if kind.endswith("RMSNorm"):
            def norm(hidden, m=module):
                variance = hidden.pow(2).mean(-1, keepdim=True)
                return m.weight * (hidden * torch.rsqrt(variance + m.variance_epsilon))
            module.forward = norm
        elif kind.endswith("RotaryEmbedding"):
            dim = 2 * module.inv_freq.numel()
            inv_freq = module.inv_freq.double().clone() if scaled else \
                1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
            scaling = getattr(module, "attention_scaling", 1.0)
            original = module.forward

            def rotary(x, position_ids, m=module, inv_freq=inv_freq, scaling=scaling,
                       original=original):
                angles = position_ids[:, :, None].double() * inv_freq[None, None, :]
                angles = torch.cat((angles, angles), dim=-1)
                cos, sin = angles.cos() * scaling, angles.sin() * scaling
                # The layout is HF's own ([batch, seq, head_dim], halves
                # repeated): the float32 original agrees to its rounding.
                cos32, sin32 = original(x.float(), position_ids)
                if cos32.shape != cos.shape or (cos32.double() - cos).abs().max() > 1e-5 \
                        or (sin32.double() - sin).abs().max() > 1e-5:
                    raise ValueError("%s: the float64 rotary differs from HF's"
                                     % type(m).__name__)
                return cos.to(x.dtype), sin.to(x.dtype)
            module.forward = rotary


def _float64_eval(model64, ids, labels, gradients):
    model64.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(gradients), _Float64Softmax():
        hidden = model64.base_model(input_ids=ids).last_hidden_state
        logits = model64.get_output_embeddings()(hidden)
        loss = hf_causal_loss(logits, labels)
        if gradients:
            loss.backward()
    result = dict(loss=loss.detach(), logits=logits.detach())
    if gradients:
        result["grads"] = {n: p.grad.detach().clone() for n, p in parameters(model64).items()}
    return result


def exact_float64(model, ids, labels, gradients):
    """The exact reference: a float64 copy of the model, its float32-forced
    places computed in float64 (module docstring)."""
    model64 = copy.deepcopy(model).double()
    _patch_float64(model64)
    return _float64_eval(model64, ids, labels, gradients)


def references(model, ids, labels, gradients, report):
    """HF float32 (the model under comparison), the exact float64 reference,
    float32's errors against it (the yardstick) and the tolerances derived
    from them: {"single": .., "exact": .., "tol": {"loss", "logits"[,
    "grads"]}} (rule 1; against HF float32, twice these)."""
    single = hf_float32(model, ids, labels, gradients)
    exact = exact_float64(model, ids, labels, gradients)

    # The patched reference is HF's float64 model up to the float32
    # roundings HF forces (module docstring), and HF's loss formula is
    # hf_causal_loss.
    unpatched = copy.deepcopy(model).double()
    with torch.no_grad():
        out = unpatched(input_ids=ids, labels=labels)
    agreement = max(tpc_torch.relative_error(out.logits, exact["logits"]),
                    tpc_torch.relative_error(out.loss, exact["loss"]))
    report(agreement <= REFERENCE_AGREEMENT,
           "the float64 reference equals HF's float64 model up to HF's float32 "
           "casts: relative difference %.2e (at most %.0e)" % (agreement,
                                                              REFERENCE_AGREEMENT))
    own = tpc_torch.relative_error(hf_causal_loss(single["logits"], labels), single["loss"])
    report(own <= 4 * U32, "HF's float32 loss is hf_causal_loss of its logits "
           "(relative difference %.2e)" % own)

    errors = {key: tpc_torch.relative_error(single[key], exact[key])
              for key in ("loss", "logits")}
    if gradients:
        errors["grads"] = max(tpc_torch.relative_error(single["grads"][n], exact["grads"][n])
                              for n in exact["grads"])
        errors["grad_norm"] = tpc_torch.relative_error(grad_norm(single["grads"]),
                                                       grad_norm(exact["grads"]))
    for key, error in sorted(errors.items()):
        report(error <= YARDSTICK_CAP, "yardstick: HF float32's %s error against float64 "
               "is %.2e (a broken reference would exceed %.0e)" % (key, error, YARDSTICK_CAP))
    tol = {key: tolerances.tolerance(errors[key]) for key in ("loss", "logits")}
    if gradients:
        # grad_norm as check_dist.py: the gradients' tolerance.
        tol["grads"] = tol["grad_norm"] = tolerances.tolerance(errors["grads"])
    return dict(single=single, exact=exact, tol=tol, errors=errors)


def grad_norm(grads):
    return torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values()))


def compare_to_references(what, actual, ref, key, report, worst):
    """`actual` against the exact reference (rule 1) and HF float32 (two
    float32 evaluations: 2 x rule 1); records the largest error / tolerance."""
    tolerance = ref["tol"][key]
    for against, expected, tol in (("float64", ref["exact"][key], tolerance),
                                   ("HF float32", ref["single"][key], 2 * tolerance)):
        if tuple(actual.shape) != tuple(expected.shape):
            report(False, "%s: shape %s, expected %s" % (what, list(actual.shape),
                                                         list(expected.shape)))
            continue
        error = tpc_torch.relative_error(actual, expected)
        report.close(error, tol, "%s vs %s" % (what, against))
        worst.note("%s vs %s" % (key, against), error, tol)


class Worst:
    """The largest error of each kind of check, printed at the end."""

    def __init__(self):
        self.items = {}

    def note(self, key, error, tolerance):
        old = self.items.get(key)
        if old is None or error > old[0]:
            self.items[key] = (error, tolerance)

    def print(self):
        for key in sorted(self.items):
            error, tolerance = self.items[key]
            print("worst %s: %.3e (tolerance %.2e; %s 1e-5)"
                  % (key, error, tolerance, "below" if error <= 1e-5 else "ABOVE"))


def compare_gradients(actual, ref, report, worst, what=""):
    """Every dumped gradient against both references; nothing missing or
    extra. Returns nothing; failures go to report."""
    for against, expected, tol in (("float64", ref["exact"]["grads"], ref["tol"]["grads"]),
                                   ("HF float32", ref["single"]["grads"],
                                    2 * ref["tol"]["grads"])):
        largest = e2e_support.compare_gradients(actual, expected, against + what, tol, report)
        worst.note("grads vs %s" % against, largest, tol)
