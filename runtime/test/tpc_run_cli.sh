#!/bin/sh
# tpc_run_cli.sh TPC_RUN WRITE_FIXTURES DIR
#
# tpc-run's command line: what it prints for good runs, and that every bad
# flag, file or value ends with "error: ..." on stderr and exit status 1 (never
# a signal). The files come from tpcrt-write-fixtures (the tiny model of
# TestExecutables.h). Prints one line per failed check; exits 1 if any.
set -u
run=$1
fixtures=$2
dir=$3
. "$(dirname "$0")/run_helpers.sh"
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$fixtures" "$dir" || exit 1
cd "$dir" || exit 1
checks=0

# A forward run notes on stderr whether it applies dropout ("tpc-run: the
# forward pass evaluates without dropout, ..." or "... applies the model's
# dropout ..."): kept in note.txt and left out of err.txt, which the checks
# below read.
split_note() {
  grep '^tpc-run: the forward pass ' err.txt >note.txt
  grep -v '^tpc-run: the forward pass ' err.txt >err.rest
  mv err.rest err.txt
}

# expect_error TEXT ARGS...: exit status 1, and stderr is one "error: " line
# that contains TEXT.
expect_error() {
  want=$1
  shift
  checks=$((checks + 1))
  "$run" "$@" >out.txt 2>err.txt
  rc=$?
  split_note
  if [ "$rc" -ne 1 ]; then
    fail "tpc-run $*: exit status $rc, expected 1 ($(cat err.txt))"
  elif [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^error: ' err.txt; then
    fail "tpc-run $*: stderr is not one 'error: ' line: $(cat err.txt)"
  elif ! grep -qF -- "$want" err.txt; then
    fail "tpc-run $*: '$(cat err.txt)' does not contain '$want'"
  fi
}

# expect_ok ARGS...: exit status 0, output in out.txt.
expect_ok() {
  checks=$((checks + 1))
  "$run" "$@" >out.txt 2>err.txt
  rc=$?
  split_note
  if [ "$rc" -ne 0 ]; then
    fail "tpc-run $*: exit status $rc: $(cat err.txt)"
    return 1
  fi
  return 0
}

# expect_lines REGEX COUNT: out.txt has COUNT lines matching REGEX.
expect_lines() {
  n=$(grep -cE "$1" out.txt)
  [ "$n" -eq "$2" ] || fail "expected $2 lines matching '$1', got $n: $(cat out.txt)"
}

weights="--weights weights.safetensors"
inputs="--inputs inputs.safetensors"

# --help names every flag and succeeds.
if expect_ok --help; then
  for flag in --weights --init-seed --inputs --synthetic-seed --steps \
      --device --dump-outputs --trace --ranks --help --data --data-dtype \
      --data-seed --eval-data --eval-every --eval-batches --dump-grads \
      --save-checkpoint --load-checkpoint --labels; do
    grep -q -- "$flag" out.txt || fail "--help does not explain $flag"
  done
fi

# Flags.
expect_error "no executable given" $weights $inputs
expect_error "unknown flag '--frobnicate'" tiny.tpcx $weights $inputs --frobnicate
expect_error "unknown flag '-x'" tiny.tpcx $weights $inputs -x
expect_error "more than one executable given ('tiny.tpcx', 'other.tpcx')" tiny.tpcx other.tpcx $weights $inputs
expect_error "no weights: give --weights W.safetensors, --init-seed S or --load-checkpoint C" tiny.tpcx $inputs
expect_error "no inputs: give --inputs BATCH.safetensors, --synthetic-seed S or --data TOKENS.bin" tiny.tpcx $weights
expect_error "--load-checkpoint and --weights exclude each other (the checkpoint holds every param)" tiny.tpcx $weights --load-checkpoint c $inputs
expect_error "--load-checkpoint and --init-seed exclude each other" tiny.tpcx --init-seed 1 --load-checkpoint c $inputs
expect_error "--labels needs --inputs (--synthetic-seed and --data make their labels themselves, shifted)" tiny.tpcx $weights --synthetic-seed 1 --labels unshifted
expect_error "--labels needs --inputs" tiny-train.tpcx --init-seed 1 --data tokens.bin --labels shifted
expect_error "--labels 'hf': expected shifted or unshifted" tiny.tpcx $weights $inputs --labels hf
expect_error "--labels is given twice" tiny.tpcx $weights $inputs --labels shifted --labels unshifted
expect_error "--inputs, --synthetic-seed and --data exclude each other" tiny.tpcx $weights $inputs --synthetic-seed 1
expect_error "--inputs, --synthetic-seed and --data exclude each other" tiny.tpcx $weights $inputs --data tokens.bin
expect_error "--eval-data and --eval-every go together" tiny.tpcx $weights $inputs --eval-data eval.bin
expect_error "--eval-data and --eval-every go together" tiny.tpcx $weights $inputs --eval-every 2
expect_error "--eval-every: must be at least 1" tiny.tpcx $weights $inputs --eval-data eval.bin --eval-every 0
expect_error "--eval-batches needs --eval-data" tiny.tpcx $weights $inputs --eval-batches 2
expect_error "--data-dtype needs --data or --eval-data" tiny.tpcx $weights $inputs --data-dtype uint16
expect_error "--data-seed needs --data or --eval-data" tiny.tpcx $weights $inputs --data-seed 1
expect_error "--steps: must be at least 1" tiny.tpcx $weights $inputs --steps 0
expect_error "--steps: 'many' is not a non-negative integer" tiny.tpcx $weights $inputs --steps many
expect_error "--init-seed: '-3' is not a non-negative integer" tiny.tpcx --init-seed=-3 $inputs
expect_error "--init-seed: '18446744073709551616' is not a non-negative integer" tiny.tpcx --init-seed 18446744073709551616 $inputs
expect_error "--steps needs a value" tiny.tpcx $weights $inputs --steps
expect_error "--steps is given twice" tiny.tpcx $weights $inputs --steps 1 --steps 2
expect_error "--device 'tpu': expected cpu or cuda" tiny.tpcx $weights $inputs --device tpu
expect_error "tiny.tpcx was compiled for one rank (no mesh); --ranks is 2" tiny.tpcx $weights $inputs --ranks 2
expect_error "--ranks: must be at least 1" tiny.tpcx $weights $inputs --ranks 0

# Files.
expect_error "absent.tpcx: cannot open" absent.tpcx $weights $inputs
expect_error "corrupt.tpcx: checksum mismatch" corrupt.tpcx $weights $inputs
expect_error "weights.safetensors: not a tpc executable (bad magic" weights.safetensors $weights $inputs
expect_error "mesh4.tpcx was compiled for a mesh dp=2,tp=2 (4 ranks): pass --ranks 4 (or start it under mpirun/srun)" mesh4.tpcx $weights $inputs
expect_error "huge-arena.tpcx: cpu: cannot allocate the arena of 4611686018427387904 bytes" huge-arena.tpcx $weights $inputs
expect_error "weights-missing.safetensors: missing tensor 'transformer.ln_f.weight'" tiny.tpcx --weights weights-missing.safetensors $inputs
expect_error "weights-shape.safetensors: tensor 'ln_f.weight' (param 'transformer.ln_f.weight') has shape [2, 4], expected [8]" tiny.tpcx --weights weights-shape.safetensors $inputs
expect_error "inputs-bad.safetensors: input_ids[1, 2] is 16, outside [0, 16)" tiny.tpcx $weights --inputs inputs-bad.safetensors
expect_error "inputs.safetensors: missing tensor 'transformer.wte.weight'" tiny.tpcx --weights inputs.safetensors $inputs
expect_error "out/none/x.safetensors" tiny.tpcx $weights $inputs --dump-outputs out/none/x.safetensors
# The header promises more bytes than the file has: an error, not SIGBUS.
expect_error "weights-truncated.safetensors: tensor 'wte.weight': data_offsets [2592, 3104] end beyond the data section of 1552 bytes: the file has 2224 bytes, its header describes 3776 (truncated?)" tiny.tpcx --weights weights-truncated.safetensors $inputs
head -c $(($(wc -c <inputs.safetensors) - 8)) inputs.safetensors >inputs-truncated.safetensors
expect_error "inputs-truncated.safetensors: tensor 'labels': data_offsets [32, 96] end beyond the data section of 88 bytes" tiny.tpcx $weights --inputs inputs-truncated.safetensors

# A good run: one line per step, the peak line, outputs and a trace.
if expect_ok tiny.tpcx $weights $inputs --steps 3 --dump-outputs out.safetensors --trace trace.json; then
  expect_lines '^step [1-3] loss [0-9]+\.[0-9]{6} tokens_per_s [0-9]+\.[0-9]$' 3
  [ "$(cat note.txt)" = "tpc-run: the forward pass applies the model's dropout (compiled with --keep-dropout)" ] ||
    fail "the forward run with dropout noted '$(cat note.txt)'"
  expect_lines '^rank 0 peak_bytes [0-9]+ planned_peak_bytes [0-9]+$' 1
  [ "$(wc -l <out.txt)" -eq 4 ] || fail "expected 4 lines of output: $(cat out.txt)"
  # The tiny model has dropout: each step draws another mask.
  [ "$(sed -n 1p out.txt | cut -d' ' -f4)" != "$(sed -n 2p out.txt | cut -d' ' -f4)" ] ||
    fail "steps 1 and 2 have the same loss despite dropout: $(cat out.txt)"
  [ -s out.safetensors ] || fail "--dump-outputs wrote nothing"
  for name in '"loss"' '"logits"'; do
    grep -q "$name" out.safetensors || fail "out.safetensors has no $name"
  done
  events=$(grep -o '"ph":"X"' trace.json | wc -l)
  first=$(grep -o '"step":1}' trace.json | wc -l)
  third=$(grep -o '"step":3}' trace.json | wc -l)
  [ "$first" -gt 0 ] && [ "$first" -eq "$third" ] && [ "$events" -eq $((3 * first)) ] ||
    fail "trace.json: $events complete events, $first in step 1, $third in step 3"
  grep -q '"name":"embedding"' trace.json && grep -q '"name":"loss_mean"' trace.json ||
    fail "trace.json lacks the kernel names"
  if command -v python3 >/dev/null 2>&1; then
    python3 -c "import json, sys; t = json.load(open('trace.json')); \
      sys.exit(not all(e['pid'] == 0 and e['dur'] >= 0 for e in t['traceEvents'] if e['ph'] == 'X'))" ||
      fail "trace.json is not valid trace JSON"
  fi
  ls | grep -q '\.tmp\.' && fail "a temporary file was left behind"
fi

# Made-up weights and inputs are deterministic; without dropout every step
# computes the same loss.
if expect_ok tiny-nodrop.tpcx --init-seed 3 --synthetic-seed 4 --steps 2; then
  [ "$(cat note.txt)" = "tpc-run: the forward pass evaluates without dropout, as Hugging Face's model.eval()" ] ||
    fail "the forward run without dropout noted '$(cat note.txt)'"
  cut -d' ' -f1-4 out.txt >first.txt
  [ "$(sed -n 1p first.txt | cut -d' ' -f4)" = "$(sed -n 2p first.txt | cut -d' ' -f4)" ] ||
    fail "without dropout the steps differ: $(cat out.txt)"
  if expect_ok tiny-nodrop.tpcx --init-seed=3 --synthetic-seed=4 --steps=2 --device cpu --ranks 1; then
    cut -d' ' -f1-4 out.txt | cmp -s - first.txt || fail "--init-seed / --synthetic-seed runs differ"
  fi
fi

# The Hugging Face round trip (tiny-nodrop: the same loss every run).
# expect_stderr TEXT: err.txt is TEXT (one line), or empty for "".
expect_stderr() {
  if [ -z "$1" ]; then
    [ ! -s err.txt ] || fail "expected no stderr, got: $(cat err.txt)"
  else
    [ "$(cat err.txt)" = "$1" ] || fail "stderr is '$(cat err.txt)', expected '$1'"
  fi
}
loss_of() { sed -n 1p out.txt | cut -d' ' -f1-4; }
# Labels: Hugging Face's (labels = input_ids) read as shifted get a warning;
# --labels unshifted shifts them on load, as the same batch shifted by hand.
if expect_ok tiny-nodrop.tpcx $weights --inputs inputs-hf-shifted.safetensors; then
  expect_stderr ""
  shifted=$(loss_of)
  if expect_ok tiny-nodrop.tpcx $weights --inputs inputs-hf.safetensors --labels unshifted; then
    expect_stderr ""
    [ "$(loss_of)" = "$shifted" ] ||
      fail "--labels unshifted: '$(loss_of)', the batch shifted by hand: '$shifted'"
  fi
  if expect_ok tiny-nodrop.tpcx $weights --inputs inputs-hf.safetensors; then
    expect_stderr "warning: --inputs inputs-hf.safetensors: 'labels' equals 'input_ids' (Hugging Face's convention); tpc-run reads labels pre-shifted: pass --labels unshifted to shift them as Hugging Face does"
    [ "$(loss_of)" != "$shifted" ] || fail "labels = input_ids read as shifted gave the shifted loss"
  fi
  expect_ok tiny-nodrop.tpcx $weights --inputs inputs-hf.safetensors --labels shifted &&
    expect_stderr "warning: --inputs inputs-hf.safetensors: 'labels' equals 'input_ids' (Hugging Face's convention); tpc-run reads labels pre-shifted: pass --labels unshifted to shift them as Hugging Face does"
  expect_ok tiny-nodrop.tpcx $weights $inputs --labels=shifted && expect_stderr ""
fi
# --weights DIR: a model directory's model.safetensors or its sharded index.
if expect_ok tiny-nodrop.tpcx $weights $inputs; then
  file_loss=$(loss_of)
  for model in hf-model hf-model/ hf-sharded "$PWD/hf-sharded"; do
    expect_ok tiny-nodrop.tpcx --weights "$model" $inputs &&
      { [ "$(loss_of)" = "$file_loss" ] || fail "--weights $model: '$(loss_of)', the file's: '$file_loss'"; }
  done
fi
expect_error "--weights hf-empty: no model.safetensors or model.safetensors.index.json in it" tiny-nodrop.tpcx --weights hf-empty $inputs
# Llama-family names: a LlamaModel.save_pretrained file (no "model.", no
# lm_head.weight) is refused for its head, or loads with the head drawn.
if expect_ok tiny-llama.tpcx --weights llama-causal.safetensors $inputs; then
  causal=$(loss_of)
  expect_ok tiny-llama.tpcx --weights llama-base-head.safetensors $inputs &&
    { [ "$(loss_of)" = "$causal" ] || fail "prefix-less Llama names: '$(loss_of)', the full names': '$causal'"; }
  expect_ok tiny-llama.tpcx --weights llama-causal.safetensors --init-seed 5 $inputs && expect_stderr "" &&
    { [ "$(loss_of)" = "$causal" ] || fail "--init-seed changed a complete file's weights"; }
fi
expect_error "llama-base.safetensors: missing tensor 'lm_head.weight' (a base model without its LM head, as LlamaModel.save_pretrained writes): use the ...ForCausalLM checkpoint (LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM), or add --init-seed S to draw the tensors the file lacks" tiny-llama.tpcx --weights llama-base.safetensors $inputs
if expect_ok tiny-llama.tpcx --weights llama-base.safetensors --init-seed 5 $inputs; then
  expect_stderr "warning: --weights llama-base.safetensors: drew 1 tensor the file lacks with --init-seed 5: 'lm_head.weight'"
  drawn=$(loss_of)
  expect_ok tiny-llama.tpcx --weights llama-base.safetensors --init-seed 5 $inputs &&
    { [ "$(loss_of)" = "$drawn" ] || fail "the drawn head is not deterministic"; }
fi

# bf16 storage runs too.
if expect_ok tiny-bf16.tpcx $weights $inputs; then
  expect_lines '^step 1 loss [0-9]+\.[0-9]{6} ' 1
fi

# Training (the tiny training model: AdamW, two microbatches, dropout,
# clipping, warm-up + cosine; TestExecutables.h).
train="tiny-train.tpcx --init-seed 1 --data tokens.bin"
evaluation="--eval-data eval.bin --eval-every 2"
step_line='^step [0-9]+ loss [0-9]+\.[0-9]{6} grad_norm [0-9.e+-]+ lr [0-9.e+-]+ tokens_per_s [0-9]+\.[0-9]$'
if expect_ok $train --steps 6 $evaluation --save-checkpoint full.safetensors --dump-grads grads.safetensors; then
  expect_lines "$step_line" 6
  expect_lines '^eval [246] loss [0-9]+\.[0-9]{6} batches 1$' 3
  expect_lines '^rank 0 peak_bytes [0-9]+ planned_peak_bytes [0-9]+$' 1
  [ "$(wc -l <out.txt)" -eq 10 ] || fail "expected 10 lines of output: $(cat out.txt)"
  grep -v '^rank' out.txt | sed 's/ tokens_per_s.*//' >full.txt
  for name in transformer.wte.weight transformer.h.0.mlp.c_fc.weight; do
    grep -q "\"$name\"" grads.safetensors || fail "grads.safetensors has no $name"
    grep -q "\"$name.exp_avg_sq\"" full.safetensors || fail "the checkpoint has no $name.exp_avg_sq"
  done
  grep -q '"shape":\[8,32\]' grads.safetensors ||
    fail "grads.safetensors does not hold c_fc.weight in its Hugging Face shape [8, 32]"
  for name in step random.seed data.seed data.position eval.position; do
    grep -q "\"$name\"" full.safetensors || fail "the checkpoint has no $name"
  done
  ls | grep -q '\.tmp\.' && fail "a temporary file was left behind"

  # Interrupted after step 3 and resumed: the same lines, the same bytes.
  if expect_ok $train --steps 3 $evaluation --save-checkpoint half.safetensors; then
    grep -v '^rank' out.txt | sed 's/ tokens_per_s.*//' >half.txt
    if expect_ok tiny-train.tpcx --load-checkpoint half.safetensors --data tokens.bin --steps 3 $evaluation --save-checkpoint resumed.safetensors; then
      grep -v '^rank' out.txt | sed 's/ tokens_per_s.*//' >>half.txt
      cmp -s half.txt full.txt || fail "the resumed run printed other lines: $(diff half.txt full.txt)"
      cmp -s resumed.safetensors full.safetensors || fail "the resumed run's checkpoint differs from the uninterrupted run's"
    fi
  fi
  # Evaluation does not change training.
  if expect_ok $train --steps 6 --save-checkpoint quiet.safetensors; then
    grep '^step' full.txt >full-steps.txt
    grep '^step' out.txt | sed 's/ tokens_per_s.*//' | cmp -s - full-steps.txt ||
      fail "evaluation changed the training run: $(cat out.txt)"
    # uint32 tokens with --data-dtype train exactly as the same uint16 ones.
    if expect_ok tiny-train.tpcx --init-seed 1 --data tokens32.bin --data-dtype uint32 --steps 6 --save-checkpoint wide.safetensors; then
      cmp -s wide.safetensors quiet.safetensors || fail "uint32 token data trained differently"
    fi
  fi
  # A checkpoint made by AdamW cannot resume SGD; nor one of another seed.
  expect_error "full.safetensors: no optimizer state 'transformer.wte.weight.momentum'" tiny-train-sgd.tpcx --load-checkpoint full.safetensors --data tokens.bin
  expect_error "full.safetensors: the checkpoint's dropout seed 77 is not the executable's 78" tiny-train-seed78.tpcx --load-checkpoint full.safetensors --data tokens.bin
  expect_error "--data-seed 5: the checkpoint drew its batches with seed 0" tiny-train.tpcx --load-checkpoint full.safetensors --data tokens.bin --data-seed 5
fi

# Checkpoint directories: what Hugging Face's from_pretrained reads
# (config.json, the params in model.safetensors with {"format": "pt"},
# sharded with an index above TPCRT_CHECKPOINT_SHARD_BYTES) and tpc's
# training state (training_state.safetensors: the optimizer state, I64
# counters, the 64-bit seeds as metadata strings; no U64). The same runs as
# above: full.txt and the single files are the reference.
if [ -s full.txt ] && expect_ok $train --steps 6 $evaluation --save-checkpoint full-dir; then
  grep -v '^rank' out.txt | sed 's/ tokens_per_s.*//' | cmp -s - full.txt ||
    fail "saving a directory changed the run: $(cat out.txt)"
  [ "$(ls full-dir | tr '\n' ' ')" = "config.json model.safetensors training_state.safetensors " ] ||
    fail "full-dir holds $(ls full-dir | tr '\n' ' ')"
  grep -q '"__metadata__":{"format":"pt"}' full-dir/model.safetensors ||
    fail "model.safetensors lacks the metadata {\"format\": \"pt\"}"
  grep -q '"transformer.h.0.mlp.c_fc.weight":{"dtype":"F32","shape":\[8,32\]' full-dir/model.safetensors ||
    fail "model.safetensors does not hold c_fc.weight in its Hugging Face shape"
  grep -q 'exp_avg' full-dir/model.safetensors && fail "model.safetensors holds optimizer state"
  grep -q '"transformer.wte.weight.exp_avg_sq":{"dtype":"F32","shape":\[16,8\]' full-dir/training_state.safetensors ||
    fail "training_state.safetensors lacks wte's exp_avg_sq"
  for name in step data.position eval.position; do
    grep -q "\"$name\":{\"dtype\":\"I64\",\"shape\":\[\]" full-dir/training_state.safetensors ||
      fail "training_state.safetensors: $name is not an I64 scalar"
  done
  grep -q '"U64"' full-dir/training_state.safetensors && fail "training_state.safetensors has a U64 tensor"
  for entry in '"data.seed":"0"' '"format":"pt"' '"random.seed":"77"' '"tpc.format":"tpc-training-state"'; do
    grep -qF "$entry" full-dir/training_state.safetensors || fail "training_state.safetensors' metadata lacks $entry"
  done
  [ "$(sed -n 1,3p full-dir/config.json | tr -d '\n')" = '{  "architectures": [    "GPT2LMHeadModel"' ] &&
    grep -q '^  "model_type": "gpt2",$' full-dir/config.json && grep -q '^  "vocab_size": 16$' full-dir/config.json ||
    fail "config.json is not the executable's config, pretty-printed: $(cat full-dir/config.json)"
  ls . full-dir | grep -q '\.tmp\.' && fail "a temporary file was left behind"

  # Stopped after step 3 in a directory and resumed from it: the same lines,
  # the same files byte for byte; into a single file, the single file's
  # bytes. The single file of step 3 (the format before directories) resumes
  # into the same directory.
  if expect_ok $train --steps 3 $evaluation --save-checkpoint half-dir; then
    resume="tiny-train.tpcx --data tokens.bin --steps 3 $evaluation"
    if expect_ok $resume --load-checkpoint half-dir --save-checkpoint resumed-dir; then
      grep -v '^rank' out.txt | sed 's/ tokens_per_s.*//' >resumed-dir.txt
      grep '^step 4 ' resumed-dir.txt >/dev/null || fail "the resumed run does not go on from step 4: $(cat out.txt)"
      sed '1,/^step 3 /d' full.txt | cmp -s - resumed-dir.txt ||
        fail "resumed from a directory, the run printed other lines: $(cat out.txt)"
      diff -r resumed-dir full-dir >/dev/null || fail "the directory resumed from a directory differs from the uninterrupted run's"
    fi
    expect_ok $resume --load-checkpoint half-dir --save-checkpoint dir-to-file.safetensors &&
      { cmp -s dir-to-file.safetensors full.safetensors || fail "resumed from a directory into a file: other bytes than full.safetensors"; }
    expect_ok $resume --load-checkpoint half.safetensors --save-checkpoint file-to-dir &&
      { diff -r file-to-dir full-dir >/dev/null || fail "resumed from a single file into a directory: other files than full-dir"; }

    # Sharded as save_pretrained shards (a tiny limit): wte 512 bytes,
    # ln_f 32 + 32, c_fc.weight 1024, c_fc.bias 128, down.weight 1024,
    # down.bias 32 into 4 shards, the two above 600 alone.
    export TPCRT_CHECKPOINT_SHARD_BYTES=600
    if expect_ok $resume --load-checkpoint half-dir --save-checkpoint sharded; then
      [ "$(ls sharded | tr '\n' ' ')" = "config.json model-00001-of-00004.safetensors model-00002-of-00004.safetensors model-00003-of-00004.safetensors model-00004-of-00004.safetensors model.safetensors.index.json training_state.safetensors " ] ||
        fail "sharded holds $(ls sharded | tr '\n' ' ')"
      grep -q '^    "total_size": 2784$' sharded/model.safetensors.index.json &&
        grep -q '^    "transformer.h.0.mlp.c_fc.weight": "model-00001-of-00004.safetensors",$' sharded/model.safetensors.index.json &&
        grep -q '^    "transformer.wte.weight": "model-00002-of-00004.safetensors"$' sharded/model.safetensors.index.json ||
        fail "model.safetensors.index.json: $(cat sharded/model.safetensors.index.json)"
      for f in sharded/model-0000*; do
        grep -q '"__metadata__":{"format":"pt"}' "$f" || fail "$f lacks {\"format\": \"pt\"}"
      done
      cmp -s sharded/training_state.safetensors full-dir/training_state.safetensors ||
        fail "the sharded directory's training state differs"
    fi
    unset TPCRT_CHECKPOINT_SHARD_BYTES
    # Resuming from the sharded directory and re-saving unsharded into it:
    # the shards and the index go, the same files as an unsharded save.
    if expect_ok tiny-train.tpcx --data tokens.bin --steps 1 --load-checkpoint sharded --save-checkpoint sharded; then
      grep -q '^step 7 ' out.txt || fail "resumed from the sharded directory: $(cat out.txt)"
      [ "$(ls sharded | tr '\n' ' ')" = "config.json model.safetensors training_state.safetensors " ] ||
        fail "an unsharded save left $(ls sharded | tr '\n' ' ')"
      expect_ok tiny-train.tpcx --data tokens.bin --steps 1 --load-checkpoint full-dir --save-checkpoint full-dir-7 &&
        { diff -r sharded full-dir-7 >/dev/null || fail "resumed from the sharded directory: other files"; }
    fi
    export TPCRT_CHECKPOINT_SHARD_BYTES=lots
    expect_error "TPCRT_CHECKPOINT_SHARD_BYTES: 'lots' is not a non-negative integer" $resume --load-checkpoint half-dir --save-checkpoint x
    unset TPCRT_CHECKPOINT_SHARD_BYTES
  fi
  # A checkpoint directory is a model directory: --weights takes it.
  expect_ok tiny-train.tpcx --weights full-dir --data tokens.bin --steps 1 ||
    fail "--weights on a checkpoint directory"

  # What a directory must hold, and what must match.
  mkdir -p no-state no-weights no-shard
  cp full-dir/* no-state/ && rm no-state/training_state.safetensors
  cp full-dir/* no-weights/ && rm no-weights/model.safetensors
  expect_error "no-state: no training_state.safetensors in it (tpc's training state: optimizer state, step, seeds, data positions; a save that did not finish, or a Hugging Face model directory: --weights no-state loads its weights alone)" tiny-train.tpcx --load-checkpoint no-state --data tokens.bin
  expect_error "no-weights: no model.safetensors or model.safetensors.index.json in it" tiny-train.tpcx --load-checkpoint no-weights --data tokens.bin
  if TPCRT_CHECKPOINT_SHARD_BYTES=600 "$run" tiny-train.tpcx --load-checkpoint full-dir --data tokens.bin --steps 1 --save-checkpoint no-shard >/dev/null 2>&1; then
    rm no-shard/model-00003-of-00004.safetensors
    expect_error "no-shard/model-00003-of-00004.safetensors: cannot open" tiny-train.tpcx --load-checkpoint no-shard --data tokens.bin
  else
    fail "a sharded save failed"
  fi
  expect_error "absent-dir: no such checkpoint directory" tiny-train.tpcx --load-checkpoint absent-dir --data tokens.bin
  expect_error "full-dir/training_state.safetensors: no optimizer state 'transformer.wte.weight.momentum'" tiny-train-sgd.tpcx --load-checkpoint full-dir --data tokens.bin
  expect_error "full-dir/training_state.safetensors: the checkpoint's dropout seed 77 is not the executable's 78" tiny-train-seed78.tpcx --load-checkpoint full-dir --data tokens.bin
  expect_error "--data-seed 5: the checkpoint drew its batches with seed 0" tiny-train.tpcx --load-checkpoint full-dir --data tokens.bin --data-seed 5
fi
# An executable compiled before executables recorded their Hugging Face
# config saves single files only, and says so before running.
expect_error "--save-checkpoint old-dir: the executable records no Hugging Face config (it was compiled before executables carried one): recompile it (tpc-import, tpc-compile) to save a checkpoint directory, or save a single file with a path ending in .safetensors" tiny-train-nohf.tpcx --init-seed 1 --data tokens.bin --save-checkpoint old-dir
[ -s out.txt ] && fail "the refused save ran steps first: $(cat out.txt)"
[ -e old-dir ] && fail "the refused save created old-dir"
expect_ok tiny-train-nohf.tpcx --init-seed 1 --data tokens.bin --save-checkpoint old.safetensors
echo x >plain-file
expect_error "--save-checkpoint plain-file: exists and is not a directory (a checkpoint directory; a single-file checkpoint takes a path ending in .safetensors)" tiny-train.tpcx --init-seed 1 --data tokens.bin --save-checkpoint plain-file

# The loss falls when training for a while (SGD, lr 0.1).
if expect_ok tiny-train-sgd.tpcx --weights train-weights.safetensors --data tokens.bin --steps 40; then
  first=$(sed -n 1p out.txt | cut -d' ' -f4)
  last=$(sed -n 40p out.txt | cut -d' ' -f4)
  awk "BEGIN { exit !($last < 0.7 * $first) }" ||
    fail "the loss did not fall: step 1 $first, step 40 $last"
fi

expect_error "tokens-odd.bin: 3 bytes are not a whole number of uint16 tokens" tiny-train.tpcx --init-seed 1 --data tokens-odd.bin
expect_error "--inputs, --synthetic-seed and --data exclude each other" $train --inputs train-batch.safetensors
expect_error "tokens-short.bin: 4 tokens, fewer than the 5 a sequence of 4 and its last target need" tiny-train.tpcx --init-seed 1 --data tokens-short.bin
expect_error "tokens-outside.bin: token 300 at position 250 is outside [0, 16)" tiny-train.tpcx --init-seed 1 --data tokens-outside.bin --steps 40
expect_error "--data-dtype 'int8': expected uint16 or uint32" $train --data-dtype int8
expect_error "--data-dtype 'u16': expected uint16 or uint32" $train --data-dtype u16
expect_error "absent.bin: cannot open" tiny-train.tpcx --init-seed 1 --data absent.bin
expect_error "--dump-grads: the executable computes no gradients" tiny.tpcx $weights $inputs --dump-grads g.safetensors
expect_error "absent.safetensors: cannot open" tiny-train.tpcx --load-checkpoint absent.safetensors --data tokens.bin

echo "tpc_run_cli.sh: $checks runs, $failures failed"
[ "$failures" -eq 0 ]
