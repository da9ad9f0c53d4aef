#!/usr/bin/env python3
"""tpc-plan's closed-form memory beside the compiled plan's planned peak.

tpc-plan drops every plan whose closed-form peak per device passes
--memory-limit, so that figure decides which plans are searched at all. This
script compiles a spread of plans (`tpc-plan --compare PLAN --check-plan
compared`: the real flow on the check compile's layers) and prints, per plan,
the compiled planned peak (what the runtime measures: the CPU runs assert
peak_bytes == planned_peak_bytes), the closed form with the schedule's real
in-flight counts (the replay's) and the search's closed form, with their
errors; then the step the compile's replay predicts beside the closed
form's replayed on the schedule's action lists and the search's closed
form (the step that ranks every candidate and picks the ones replayed). Nothing is timed: each case takes well under a second.

    benchmarks/plan-memory.py [--bin build/bin] [--hardware a100]
                              [--kinds KIND=FACTOR,...] [--links LINK=FACTOR,...]
                              [--kind-deltas KIND,...]
                              [--max-error PCT] [--max-step-error PCT]

--kinds gives kinds of memory-bound kernels their own fraction of the
bandwidth (efficiency.elementwise_bandwidth.kinds, as a GPU's trace fits
them: benchmarks/cuda/report.py trace-ops --calibrate): each KIND at the
description's value times FACTOR, in a copy of the --hardware description
(a name under hardware/ or a path). --kind-deltas prints, instead of the
table, each kind's step change with the kind alone at a tenth of the
description's elementwise value, in the compile's replay beside the closed
form's and the search's: where the closed form counts a kind's bytes as
the replay does the two move alike. --links scales the description's intra_node and
inter_node bandwidths (LINK=FACTOR); --kind-deltas takes them too, each at
half its bandwidth: where the closed form counts the collectives a step
waits for as the replay does, the two move alike.

With --max-error it exits 1 when a memory error passes PCT (either way),
with --max-step-error when a step's does (replayed or searched).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

GPT = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
       "n_positions": 2048, "activation_function": "gelu_new",
       "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
       "layer_norm_epsilon": 1e-5, "initializer_range": 0.02}


def gpt(h, heads, layers, vocab=51200):
    return dict(GPT, n_embd=h, n_head=heads, n_layer=layers, vocab_size=vocab)


def llama(h, heads, kv, ffn, layers, vocab=32000):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "vocab_size": vocab, "hidden_size": h, "intermediate_size": ffn,
            "num_hidden_layers": layers, "num_attention_heads": heads,
            "num_key_value_heads": kv, "max_position_embeddings": 4096,
            "hidden_act": "silu", "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "attention_bias": False, "attention_dropout": 0.0,
            "mlp_bias": False, "tie_word_embeddings": False}


# (label, config, gpus, global batch, seq, attention, dtype, plan)
CASES = [
    ("gpt mfu", gpt(2048, 16, 8, vocab=50257), 1, 8, 2048, "fused", "bf16",
     "tp=1,pp=1,b=8,v=1,schedule=1f1b,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=1,pp=1,b=8,v=1,schedule=1f1b,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=1,pp=1,b=1,v=1,schedule=1f1b,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "unfused", "bf16",
     "tp=1,pp=1,b=1,v=1,schedule=1f1b,remat=full"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=2,pp=1,b=32,v=1,schedule=1f1b,remat=full,sp"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "unfused", "bf16",
     "tp=2,pp=1,b=2,v=1,schedule=1f1b,remat=selective,sp"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=2,pp=4,b=2,v=1,schedule=1f1b,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=2,pp=4,b=2,v=1,schedule=zb-h1,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=2,pp=4,b=2,v=1,schedule=gpipe,remat=full"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=1,pp=4,b=1,v=2,schedule=interleaved-1f1b,remat=none"),
    ("gpt 1.7B", gpt(2304, 24, 24), 32, 512, 2048, "fused", "bf16",
     "tp=2,pp=4,b=2,v=2,schedule=zb-v,remat=none"),
    ("gpt 1.7B fp32", gpt(2304, 24, 24), 32, 512, 2048, "fused", "fp32",
     "tp=4,pp=2,b=1,v=1,schedule=1f1b,remat=none,sp"),
    ("gpt 39.1B", gpt(8192, 64, 48), 512, 1536, 2048, "unfused", "bf16",
     "tp=8,pp=2,b=1,v=1,schedule=1f1b,remat=full"),
    ("gpt 39.1B", gpt(8192, 64, 48), 512, 1536, 2048, "fused", "bf16",
     "tp=8,pp=4,b=1,v=1,schedule=zb-h1,remat=none,sp"),
    ("gpt 39.1B", gpt(8192, 64, 48), 512, 1536, 2048, "fused", "bf16",
     "tp=4,pp=4,b=2,v=3,schedule=interleaved-1f1b,remat=full,sp"),
    ("gpt 39.1B", gpt(8192, 64, 48), 8, 4, 2048, "fused", "bf16",
     "tp=2,pp=1,b=1,v=1,schedule=1f1b,remat=none"),
    ("gpt 1T", gpt(25600, 160, 128), 3072, 3072, 2048, "unfused", "bf16",
     "tp=8,pp=64,b=1,v=1,schedule=1f1b,remat=full"),
    ("gpt 1T", gpt(25600, 160, 128), 3072, 3072, 2048, "fused", "bf16",
     "tp=8,pp=64,b=1,v=1,schedule=zb-h1,remat=none,sp"),
    ("gpt 1T", gpt(25600, 160, 128), 3072, 3072, 2048, "unfused", "bf16",
     "tp=8,pp=64,b=1,v=1,schedule=zb-h1,remat=selective,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 8, 8, 4096, "fused",
     "bf16", "tp=8,pp=1,b=8,v=1,schedule=1f1b,remat=none,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=4,pp=2,b=1,v=1,schedule=1f1b,remat=none,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=8,pp=4,b=1,v=1,schedule=zb-h1,remat=none,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=4,pp=2,b=1,v=1,schedule=1f1b,remat=full"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=2,pp=4,b=1,v=1,schedule=gpipe,remat=full"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=4,pp=4,b=2,v=1,schedule=zb-h1,remat=full"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 16, 8, 4096, "fused",
     "fp32", "tp=1,pp=4,b=2,v=1,schedule=1f1b,remat=none"),
    ("llama 3B odd", llama(3072, 24, 6, 8192, 20, vocab=32003), 16, 128, 2048,
     "unfused", "fp32", "tp=1,pp=4,b=4,v=1,schedule=1f1b,remat=full"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 32, 4, 4096, "fused",
     "bf16", "tp=8,pp=4,b=4,v=1,schedule=gpipe,remat=full,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "unfused",
     "bf16", "tp=2,pp=2,b=2,v=4,schedule=interleaved-1f1b,remat=selective"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 64, 512, 4096, "fused",
     "bf16", "tp=8,pp=4,b=1,v=2,schedule=zb-v,remat=none,sp"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 2, 8, 4096, "unfused",
     "fp32", "tp=2,pp=1,b=4,v=1,schedule=1f1b,remat=full"),
    ("llama 8B", llama(4096, 32, 8, 14336, 32), 16, 16, 4096, "fused",
     "bf16", "tp=4,pp=2,b=2,v=2,schedule=zb-v,remat=full"),
]


LINKS = ("intra_node", "inter_node")


def description_with(root, hardware, kinds, out, links=None):
    """Writes `out`: the --hardware description (a name under hardware/ or
    a path) with `kinds` ({kind: factor}) at its elementwise value times
    the factor and `links` ({intra_node or inter_node: factor}) at their
    bandwidth times the factor; returns `out`."""
    path = hardware if os.path.exists(hardware) else os.path.join(
        root, "hardware", hardware + ".json")
    with open(path) as f:
        description = json.load(f)
    elementwise = description["efficiency"]["elementwise_bandwidth"]
    table = elementwise.setdefault("kinds", {})
    for kind, factor in kinds.items():
        table[kind] = round(elementwise["value"] * factor, 4)
    for link, factor in (links or {}).items():
        description[link]["bytes_per_s"] *= factor
    with open(out, "w") as f:
        json.dump(description, f)
    return out


def check_case(args, hardware, work, i):
    """tpc-plan's check of case i compiled on `hardware`: its report's
    "check" section, or None (printed) where tpc-plan failed."""
    label, config, gpus, batch, seq, attention, dtype, plan = CASES[i]
    path = os.path.join(work, f"model{i}.json")
    with open(path, "w") as f:
        json.dump(config, f)
    report = os.path.join(work, f"plan{i}.json")
    done = subprocess.run(
        [os.path.join(args.bin, "tpc-plan"), path, "--gpus", str(gpus),
         "--hardware", hardware, "--global-batch", str(batch), "--seq",
         str(seq), "--attention", attention, "--dtype", dtype,
         "--memory-limit", "1000GB", "--top", "1", "--compare", plan,
         "--check-plan", "compared", "--report", report],
        capture_output=True, text=True)
    if done.returncode != 0:
        print(f"{label:<14} {plan:<58} failed: {done.stderr.strip()}")
        return None
    with open(report) as f:
        return json.load(f)["check"]


def kind_deltas(args, root, hardware, work):
    """Per kind of --kind-deltas: each case's step with the kind alone at
    a tenth of the description's elementwise value, less its step at the
    description, in the compile's replay, the closed form and the search;
    a closed-form delta unlike the replay's names bytes the closed form
    counts under another kind (or not at all)."""
    steps = ("compiled_step_time_s", "closed_form_step_time_s",
             "searched_step_time_s")
    base = [check_case(args, hardware, work, i) for i in range(len(CASES))]
    for kind in args.kind_deltas.split(","):
        link = kind in LINKS
        slow = description_with(
            root, hardware, {} if link else {kind: 0.1},
            os.path.join(work, "slow.json"), {kind: 0.5} if link else None)
        print(f"{kind} at {'half its bandwidth' if link else 'a tenth'}: "
              f"step s more (replay, closed form, searched; closed / replay)")
        for i, before in enumerate(base):
            after = check_case(args, slow, work, i)
            if before is None or after is None:
                continue
            replay, closed, searched = (after[k] - before[k] for k in steps)
            if max(abs(replay), abs(closed)) <= 1e-4 * before[steps[0]]:
                continue
            ratio = f"{closed / replay:.3f}" if replay else "-"
            label, plan = CASES[i][0], CASES[i][7]
            print(f"  {label:<14} {plan:<58} {replay:>+9.4f} "
                  f"{closed:>+9.4f} {searched:>+9.4f} {ratio:>7}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--bin", default=os.path.join(root, "build", "bin"))
    parser.add_argument("--hardware", default="a100",
                        help="tpc-plan's --hardware (default a100)")
    parser.add_argument("--kinds", default="",
                        help="KIND=FACTOR,...: those kinds at the "
                        "description's elementwise value times FACTOR")
    parser.add_argument("--links", default="",
                        help="LINK=FACTOR,...: intra_node, inter_node at "
                        "the description's bandwidth times FACTOR")
    parser.add_argument("--kind-deltas", default="",
                        help="KIND,...: instead of the table, each kind's "
                        "step change at a tenth of the elementwise value "
                        "(intra_node, inter_node: at half the link's "
                        "bandwidth), in the replay beside the closed "
                        "forms'")
    parser.add_argument("--max-error", type=float)
    parser.add_argument("--max-step-error", type=float)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="plan-memory.")
    hardware = args.hardware
    if args.kinds or args.links:
        def factors(specs):
            table = {}
            for spec in filter(None, specs.split(",")):
                name, factor = spec.rsplit("=", 1)
                table[name] = float(factor)
            return table
        links = factors(args.links)
        for link in links:
            if link not in LINKS:
                parser.error(f"--links: {link} is not one of "
                             f"{', '.join(LINKS)}")
        hardware = description_with(
            root, hardware, factors(args.kinds),
            os.path.join(work, "hardware.json"), links)
    if args.kind_deltas:
        kind_deltas(args, root, hardware, work)
        return
    print(f"{'model':<14} {'plan':<58} {'layers':>6} {'compiled':>9} "
          f"{'replayed':>9} {'error':>7} {'searched':>9} {'error':>7} "
          f"{'step_s':>9} {'closed':>9} {'error':>7} {'searched':>9} "
          f"{'error':>7}")
    worst = 0.0
    worst_step = 0.0
    worst_searched_step = 0.0
    failed = False
    for i, (label, _, _, _, _, _, _, plan) in enumerate(CASES):
        check = check_case(args, hardware, work, i)
        if check is None:
            failed = True
            continue
        gb = 1e9
        compiled = check["compiled_peak_bytes"]
        replayed = check["closed_form_peak_bytes"]
        searched = check["searched_peak_bytes"]
        error = replayed / compiled - 1
        search_error = searched / compiled - 1
        worst = max(worst, abs(search_error), abs(error))
        step_error = (check["closed_form_step_time_s"] /
                      check["compiled_step_time_s"] - 1)
        worst_step = max(worst_step, abs(step_error))
        searched_step = check["searched_step_time_s"]
        searched_step_error = searched_step / check["compiled_step_time_s"] - 1
        worst_searched_step = max(worst_searched_step,
                                  abs(searched_step_error))
        print(f"{label:<14} {plan:<58} {check['layers']:>6} "
              f"{compiled / gb:>9.2f} {replayed / gb:>9.2f} "
              f"{100 * error:>+6.1f}% {searched / gb:>9.2f} "
              f"{100 * search_error:>+6.1f}% "
              f"{check['compiled_step_time_s']:>9.4f} "
              f"{check['closed_form_step_time_s']:>9.4f} "
              f"{100 * step_error:>+6.1f}% {searched_step:>9.4f} "
              f"{100 * searched_step_error:>+6.1f}%")
    print(f"largest memory |error|: {100 * worst:.1f}%")
    print(f"largest step |error|: {100 * worst_step:.1f}%")
    print(f"largest searched step |error|: {100 * worst_searched_step:.1f}%")
    if (failed or
            (args.max_error is not None and 100 * worst > args.max_error) or
            (args.max_step_error is not None and
             100 * max(worst_step, worst_searched_step) >
             args.max_step_error)):
        sys.exit(1)


if __name__ == "__main__":
    main()
