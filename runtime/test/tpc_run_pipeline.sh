#!/bin/sh
# tpc_run_pipeline.sh TPC_RUN RANKS_FIXTURES DIR
#
# tpc-run on pipeline stages, with the training step of
# PipelineExecutables.h on [pp=2] (pipe2.tpcx) against its one-stage twin
# (pipe-twin.tpcx), and on [pp=2, dp=2] (pipe4.tpcx) against its twin on
# [dp=2] (pipe-dp.tpcx): rank 0 prints the step lines (the loss comes from
# the last stage), the same as the twin's; every file (outputs, gradients,
# checkpoints) holds every tensor once and is byte for byte the twin's;
# evaluation, made-up weights and inputs, token data, resuming from a
# checkpoint and traces work on the stages; the action-list step
# (ActionExecutables.h) against its unrolled twin, with blocking and with
# started transfers. Exits 77 (skipped) without
# mpiexec on PATH. Prints one line per failed check; exits 1 if any.
set -u
run=$1
fixtures=$2
dir=$3
. "$(dirname "$0")/run_helpers.sh"
require_mpiexec
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$fixtures" pipeline "$dir" || exit 1
cd "$dir" || exit 1
checks=0


# expect_ok NAME ARGS...: exit status 0, output in NAME.txt without the
# tokens_per_s figures (they vary).
expect_ok() {
  name=$1
  shift
  checks=$((checks + 1))
  "$@" >"$name.raw" 2>"$name.err"
  rc=$?
  sed 's/ tokens_per_s .*//' "$name.raw" >"$name.txt"
  if [ "$rc" -ne 0 ]; then
    fail "$*: exit status $rc: $(cat "$name.err")"
    return 1
  fi
  return 0
}

# expect_same A B: the two files are identical.
expect_same() {
  cmp -s "$1" "$2" || fail "$1 and $2 differ"
}

files() {
  echo "--dump-outputs $1-out.safetensors --dump-grads $1-grads.safetensors --save-checkpoint $1-ckpt.safetensors"
}
weights="--weights pipe-weights.safetensors"
batch="--inputs pipe-batch.safetensors"
step_line='^step [1-3] loss [0-9.]* grad_norm [0-9.e-]* lr 0.25$'

# The rank count is the mesh's.
checks=$((checks + 1))
"$run" pipe2.tpcx $weights $batch --ranks 3 >out.txt 2>err.txt
grep -q '^error: pipe2.tpcx was compiled for a mesh pp=2 (2 ranks); --ranks is 3$' err.txt ||
  fail "--ranks 3 of a 2-stage executable: $(cat err.txt)"

# Three training steps on one stage, then on two: rank 0 prints the loss of
# the last stage, and every file is the twin's.
if expect_ok twin "$run" pipe-twin.tpcx $weights $batch --steps 3 $(files twin); then
  [ "$(grep -c "$step_line" twin.txt)" -eq 3 ] || fail "twin: $(cat twin.raw)"
  grep '^step' twin.txt >twin.steps
  # The loss falls.
  awk '/^step/ { if (NR > 1 && $4 >= last) bad = 1; last = $4 } END { exit bad }' twin.txt ||
    fail "twin: the loss does not fall: $(cat twin.raw)"
fi
if expect_ok p2 "$run" pipe2.tpcx $weights $batch --steps 3 $(files p2) --ranks 2 --trace trace.json; then
  grep '^step' p2.txt | cmp -s - twin.steps || fail "2 stages printed other step lines: $(cat p2.raw)"
  [ "$(grep -c '^rank [01] peak_bytes [0-9]* planned_peak_bytes [0-9]*$' p2.txt)" -eq 2 ] ||
    fail "2 stages: not one peak line per rank: $(cat p2.raw)"
  [ "$(wc -l <p2.txt)" -eq 5 ] || fail "2 stages: expected 5 lines: $(cat p2.raw)"
  # Each rank's planned peak is its stage's.
  [ "$(sed -n 4p p2.txt | cut -d' ' -f6)" != "$(sed -n 5p p2.txt | cut -d' ' -f6)" ] ||
    fail "2 stages: both ranks report the same planned peak: $(cat p2.raw)"
  for f in out grads ckpt; do
    expect_same p2-$f.safetensors twin-$f.safetensors
  done
  "$fixtures" same p2-out.safetensors twin-out.safetensors loss grad_norm lr ||
    fail "2 stages: outputs"
  # Rank 0 (stage 0) traces its stage's kernels, rank 1 stage 1's; both
  # transfer.
  grep -q '"name":"send"' trace.0.json && ! grep -q '"name":"cross_entropy"' trace.0.json ||
    fail "trace.0.json is not stage 0's"
  grep -q '"name":"recv","cat":"comm"' trace.1.json && grep -q '"name":"cross_entropy"' trace.1.json ||
    fail "trace.1.json is not stage 1's"
fi

# [pp=2, dp=2] on 4 ranks against the twin on [dp=2].
if expect_ok dp "$run" pipe-dp.tpcx $weights $batch --steps 3 $(files dp) --ranks 2 &&
   expect_ok p4 "$run" pipe4.tpcx $weights $batch --steps 3 $(files p4) --ranks 4; then
  [ "$(grep -c "$step_line" p4.txt)" -eq 3 ] || fail "4 ranks: $(cat p4.raw)"
  grep '^step' p4.txt | cmp -s - "$(grep '^step' dp.txt >dp.steps; echo dp.steps)" ||
    fail "[pp=2, dp=2] printed other step lines than [dp=2]: $(cat p4.raw) / $(cat dp.raw)"
  [ "$(grep -c '^rank [0-3] peak_bytes' p4.txt)" -eq 4 ] || fail "4 ranks: $(cat p4.raw)"
  for f in out grads ckpt; do
    expect_same p4-$f.safetensors dp-$f.safetensors
  done
fi

# Under mpiexec, with made-up weights and inputs.
made_up="--init-seed 3 --synthetic-seed 8"
if expect_ok twin-s "$run" pipe-twin.tpcx $made_up --steps 2 $(files twin-s) &&
   expect_ok mpi-s mpiexec --allow-run-as-root --oversubscribe -n 2 "$run" pipe2.tpcx $made_up --steps 2 $(files mpi-s); then
  grep -v '^rank' mpi-s.txt | cmp -s - "$(grep -v '^rank' twin-s.txt >twin-s.lines; echo twin-s.lines)" ||
    fail "made up: other lines on 2 stages: $(cat mpi-s.raw)"
  for f in out grads ckpt; do
    expect_same mpi-s-$f.safetensors twin-s-$f.safetensors
  done
  cmp -s twin-s-out.safetensors twin-out.safetensors && fail "--init-seed gave the weights file's outputs"
fi

# Token data with evaluation between the steps: every stage runs its share
# of the forward pass.
tokens="--data pipe-tokens.bin --eval-data pipe-eval.bin --eval-every 1 --eval-batches 2 --steps 3"
if expect_ok twin-d "$run" pipe-twin.tpcx $weights $tokens $(files twin-d) &&
   expect_ok p2-d "$run" pipe2.tpcx $weights $tokens $(files p2-d) --ranks 2; then
  grep -v '^rank' twin-d.txt >twin-d.lines
  [ "$(grep -c '^eval [123] loss [0-9.]* batches 2$' twin-d.lines)" -eq 3 ] || fail "token data: $(cat twin-d.raw)"
  grep -v '^rank' p2-d.txt | cmp -s - twin-d.lines ||
    fail "token data: other lines on 2 stages: $(cat p2-d.raw)"
  for f in out grads ckpt; do
    expect_same p2-d-$f.safetensors twin-d-$f.safetensors
  done
fi

# Resuming from the twin's checkpoint on the stages, and the other way.
if expect_ok twin-c "$run" pipe-twin.tpcx --load-checkpoint twin-ckpt.safetensors $batch --steps 2 $(files twin-c) &&
   expect_ok p2-c "$run" pipe2.tpcx --load-checkpoint twin-ckpt.safetensors $batch --steps 2 $(files p2-c) --ranks 2; then
  grep -q '^step 5 ' p2-c.txt || fail "resumed on 2 stages: $(cat p2-c.raw)"
  grep '^step' p2-c.txt | cmp -s - "$(grep '^step' twin-c.txt >twin-c.steps; echo twin-c.steps)" ||
    fail "resumed: other step lines on 2 stages: $(cat p2-c.raw)"
  for f in out grads ckpt; do
    expect_same p2-c-$f.safetensors twin-c-$f.safetensors
  done
fi

# Checkpoint directories: saved on the stages (each param from the lowest
# stage holding it, the tied embedding once), the twin's files byte for
# byte; a directory of the stages resumes on one stage, and the other way.
if expect_ok twin-cd "$run" pipe-twin.tpcx --load-checkpoint twin-ckpt.safetensors $batch --steps 2 --save-checkpoint twin-cd &&
   expect_ok p2-cd "$run" pipe2.tpcx --load-checkpoint twin-ckpt.safetensors $batch --steps 2 --save-checkpoint p2-cd --ranks 2; then
  diff -r p2-cd twin-cd >/dev/null || fail "the directory of 2 stages differs from the twin's"
  if expect_ok twin-cd2 "$run" pipe-twin.tpcx --load-checkpoint p2-cd $batch --save-checkpoint twin-cd2 &&
     expect_ok p2-cd2 "$run" pipe2.tpcx --load-checkpoint twin-cd $batch --save-checkpoint p2-cd2 --ranks 2; then
    grep '^step' twin-cd2.txt >twin-cd2.steps
    grep '^step 6 ' twin-cd2.steps >/dev/null || fail "resumed from p2-cd: $(cat twin-cd2.raw)"
    grep '^step' p2-cd2.txt | cmp -s - twin-cd2.steps || fail "resumed on 2 stages: other lines: $(cat p2-cd2.raw)"
    diff -r p2-cd2 twin-cd2 >/dev/null || fail "resumed from directories: other files on 2 stages than on one"
  fi
fi

# Functions and actions (ActionExecutables.h): the step as actions on one
# stage and on two against the same step unrolled, byte for byte, with
# token data (every slot of the inputs' pools filled with its microbatch)
# and evaluation between the steps; the trace has a run per microbatch.
act="--init-seed 3 --data pipe-tokens.bin --eval-data pipe-eval.bin --eval-every 1 --eval-batches 2 --steps 3"
for stages in 1 2; do
  ranks=""
  [ "$stages" -eq 2 ] && ranks="--ranks 2"
  if expect_ok act$stages-u "$run" act$stages-unrolled.tpcx $act $(files act$stages-u) $ranks &&
     expect_ok act$stages "$run" act$stages.tpcx $act $(files act$stages) $ranks --trace act$stages.json; then
    grep -v '^rank' act$stages-u.txt >act$stages-u.lines
    [ "$(grep -c '^eval [123] loss [0-9.]* batches 2$' act$stages-u.lines)" -eq 3 ] ||
      fail "actions on $stages stages: $(cat act$stages-u.raw)"
    grep -v '^rank' act$stages.txt | cmp -s - act$stages-u.lines ||
      fail "actions on $stages stages: other lines than unrolled: $(cat act$stages.raw)"
    for f in out grads ckpt; do
      expect_same act$stages-$f.safetensors act$stages-u-$f.safetensors
    done
  fi
done
grep -q '"name":"attention","cat":"kernel".*"action":[0-9]*,"microbatch":3}' act1.json ||
  fail "act1.json: no attention run of microbatch 3"
grep -q '"name":"send","cat":"comm".*"microbatch":3}' act2.0.json ||
  fail "act2.0.json: no send of microbatch 3"

# Started transfers (send_start, recv_start, wait), both stages sending
# first, against the same step unrolled with blocking ones; the waits are
# communication in the trace and in rank 0's times.
if expect_ok act2-started "$run" act2-started.tpcx $act $(files act2-started) --ranks 2 --trace started.json; then
  grep -v '^rank' act2-started.txt | cmp -s - act2-u.lines ||
    fail "started transfers: other lines than unrolled: $(cat act2-started.raw)"
  for f in out grads ckpt; do
    expect_same act2-started-$f.safetensors act2-u-$f.safetensors
  done
  for r in 0 1; do
    grep -q '"name":"wait","cat":"comm".*"microbatch":3}' started.$r.json ||
      fail "started.$r.json: no wait of microbatch 3 as communication"
    grep -q '"name":"send_start","cat":"comm"' started.$r.json ||
      fail "started.$r.json: no send_start as communication"
  done
  grep -q '^tpc-run: trace: rank 1 steps_s [0-9.]* compute_s [0-9.]* comm_s [0-9.]*' act2-started.err ||
    fail "started transfers: no times of rank 1: $(cat act2-started.err)"
fi

echo "tpc_run_pipeline.sh: $checks runs, $failures failed"
[ "$failures" -eq 0 ]
