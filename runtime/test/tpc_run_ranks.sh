#!/bin/sh
# tpc_run_ranks.sh TPC_RUN RANKS_FIXTURES DIR
#
# tpc-run on several ranks, with the rank model of RanksExecutables.h on
# [tp=2] (ranks2.tpcx), [dp=2, tp=2] (ranks4.tpcx) and its one-rank twin
# (twin.tpcx): every file a run on N ranks writes (outputs, gradients,
# checkpoints) is byte for byte the twin's, whether the ranks come from
# --ranks N or from mpiexec; the refusals of a rank count that is not the
# mesh's. Exits 77 (skipped) without mpiexec on PATH. Prints one line per
# failed check; exits 1 if any.
set -u
run=$1
fixtures=$2
dir=$3
. "$(dirname "$0")/run_helpers.sh"
require_mpiexec
rm -rf "$dir" && mkdir -p "$dir" || exit 1
"$fixtures" write "$dir" || exit 1
cd "$dir" || exit 1
mpiexec="mpiexec --allow-run-as-root --oversubscribe"
checks=0


# expect_error TEXT ARGS...: exit status 1, and stderr is one "error: " line
# that contains TEXT.
expect_error() {
  want=$1
  shift
  checks=$((checks + 1))
  "$run" "$@" >out.txt 2>err.txt
  rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "tpc-run $*: exit status $rc, expected 1 ($(cat err.txt))"
  elif [ "$(wc -l <err.txt)" -ne 1 ] || ! grep -q '^error: ' err.txt; then
    fail "tpc-run $*: stderr is not one 'error: ' line: $(cat err.txt)"
  elif ! grep -qF -- "$want" err.txt; then
    fail "tpc-run $*: '$(cat err.txt)' does not contain '$want'"
  fi
}

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

weights="--weights weights.safetensors"
batch="--inputs batch.safetensors"

# Rank counts that are not the mesh's are refused before anything runs.
expect_error "ranks2.tpcx was compiled for a mesh tp=2 (2 ranks): pass --ranks 2" ranks2.tpcx $weights $batch
expect_error "ranks2.tpcx was compiled for a mesh tp=2 (2 ranks); --ranks is 3" ranks2.tpcx $weights $batch --ranks 3
expect_error "ranks4.tpcx was compiled for a mesh dp=2,tp=2 (4 ranks); --ranks is 2" ranks4.tpcx $weights $batch --ranks 2
expect_error "twin.tpcx was compiled for one rank (no mesh); --ranks is 2" twin.tpcx $weights $batch --ranks 2
expect_error "--ranks: must be at least 1" ranks2.tpcx $weights $batch --ranks 0
# --ranks needs mpiexec.
checks=$((checks + 1))
PATH=/nonexistent "$run" ranks2.tpcx $weights $batch --ranks 2 >out.txt 2>err.txt
rc=$?
[ "$rc" -eq 1 ] && grep -q '^error: --ranks 2: no mpiexec on PATH' err.txt ||
  fail "--ranks without mpiexec: status $rc, $(cat err.txt)"
# Under a launcher, its rank count is checked the same way; only one rank
# reports it.
checks=$((checks + 1))
$mpiexec -n 3 "$run" ranks2.tpcx $weights $batch >out.txt 2>err.txt
rc=$?
[ "$rc" -ne 0 ] || fail "mpiexec -n 3 of a 2-rank executable succeeded"
[ "$(grep -c '^error: ' err.txt)" -eq 1 ] &&
  grep -q '^error: ranks2.tpcx was compiled for a mesh tp=2 (2 ranks); the launcher started 3 ranks$' err.txt ||
  fail "mpiexec -n 3: $(cat err.txt)"

# The twin, then the same run on 2 ranks (--ranks) and on 4 ranks: the same
# lines, and the same bytes in every file.
files() {
  echo "--dump-outputs $1-out.safetensors --dump-grads $1-grads.safetensors --save-checkpoint $1-ckpt.safetensors"
}
if expect_ok twin "$run" twin.tpcx $weights $batch --steps 2 $(files twin); then
  [ "$(grep -c '^step [12] loss [0-9.]*$' twin.txt)" -eq 2 ] || fail "twin: $(cat twin.raw)"
  grep '^step' twin.txt >twin.steps
  # The fixture's own checks of the twin: padding, and the files hold the
  # weights as given.
  "$fixtures" padded twin-out.safetensors weights.safetensors || fail "twin's a_padded"
  "$fixtures" same twin-ckpt.safetensors weights.safetensors a.weight b.weight c.bias d.weight e.table ||
    fail "the twin's checkpoint does not hold the weights"
  "$fixtures" same twin-grads.safetensors weights.safetensors a.weight b.weight c.bias e.table ||
    fail "the twin's gradients (copies of the params) are not the weights"
fi
if expect_ok r2 "$run" ranks2.tpcx $weights $batch --steps 2 $(files r2) --ranks 2 --trace trace.json; then
  grep '^step' r2.txt | cmp -s - twin.steps || fail "2 ranks printed other step lines: $(cat r2.raw)"
  [ "$(grep -c '^rank [01] peak_bytes [0-9]* planned_peak_bytes [0-9]*$' r2.txt)" -eq 2 ] ||
    fail "2 ranks: not one peak line per rank: $(cat r2.raw)"
  [ "$(wc -l <r2.txt)" -eq 4 ] || fail "2 ranks: expected 4 lines: $(cat r2.raw)"
  [ "$(sed -n 3p r2.txt | cut -d' ' -f2)" = 0 ] && [ "$(sed -n 4p r2.txt | cut -d' ' -f2)" = 1 ] ||
    fail "2 ranks: the peak lines are not in rank order: $(cat r2.raw)"
  for f in out grads ckpt; do
    expect_same r2-$f.safetensors twin-$f.safetensors
  done
  "$fixtures" padded r2-out.safetensors weights.safetensors || fail "2 ranks: a_padded"
  for r in 0 1; do
    [ -s trace.$r.json ] || fail "no trace.$r.json"
    grep -q "\"pid\":$r," trace.$r.json || fail "trace.$r.json: no events of pid $r"
    grep -q '"cat":"comm"' trace.$r.json || fail "trace.$r.json: no all_gather event"
  done
  [ -e trace.json ] && fail "trace.json written besides the per-rank traces"
  ls | grep -q '\.tmp\.' && fail "a temporary file was left behind"
fi
if expect_ok r4 "$run" ranks4.tpcx $weights $batch --steps 2 $(files r4) --ranks 4; then
  grep '^step' r4.txt | cmp -s - twin.steps || fail "4 ranks printed other step lines: $(cat r4.raw)"
  [ "$(grep -c '^rank [0-3] peak_bytes' r4.txt)" -eq 4 ] || fail "4 ranks: $(cat r4.raw)"
  for f in out grads ckpt; do
    expect_same r4-$f.safetensors twin-$f.safetensors
  done
fi

# Under mpiexec (the launcher's ranks, no --ranks): the same again.
if expect_ok mpi $mpiexec -n 2 "$run" ranks2.tpcx $weights $batch --steps 2 $(files mpi); then
  for f in out grads ckpt; do
    expect_same mpi-$f.safetensors twin-$f.safetensors
  done
fi

# Made-up weights and inputs do not depend on the layout.
made_up="--init-seed 9 --synthetic-seed 4"
if expect_ok twin-s "$run" twin.tpcx $made_up $(files twin-s) &&
   expect_ok r2-s "$run" ranks2.tpcx $made_up $(files r2-s) --ranks 2 &&
   expect_ok r4-s "$run" ranks4.tpcx $made_up $(files r4-s) --ranks 4; then
  for f in out grads ckpt; do
    expect_same r2-s-$f.safetensors twin-s-$f.safetensors
    expect_same r4-s-$f.safetensors twin-s-$f.safetensors
  done
  cmp -s twin-s-out.safetensors twin-out.safetensors && fail "--synthetic-seed gave the batch file's outputs"
fi

# Token data: the same global batches at the same data positions, with
# evaluation batches drawn in between.
tokens="--data tokens.bin --eval-data eval.bin --eval-every 1 --steps 3"
if expect_ok twin-d "$run" twin.tpcx $weights $tokens $(files twin-d) &&
   expect_ok r4-d "$run" ranks4.tpcx $weights $tokens $(files r4-d) --ranks 4; then
  grep -v '^rank' twin-d.txt >twin-d.lines
  [ "$(grep -c '^eval [123] loss' twin-d.lines)" -eq 3 ] || fail "token data: $(cat twin-d.raw)"
  grep -v '^rank' r4-d.txt | cmp -s - twin-d.lines ||
    fail "token data: other lines on 4 ranks: $(cat r4-d.raw)"
  for f in out ckpt; do
    expect_same r4-d-$f.safetensors twin-d-$f.safetensors
  done
fi

# A checkpoint with optimizer state is scattered and gathered back.
resume="--load-checkpoint ckpt-in.safetensors $batch"
if expect_ok twin-c "$run" twin.tpcx $resume --save-checkpoint twin-c.safetensors &&
   expect_ok r2-c "$run" ranks2.tpcx $resume --save-checkpoint r2-c.safetensors --ranks 2; then
  grep -q '^step 4 ' r2-c.txt || fail "resumed on 2 ranks: $(cat r2-c.raw)"
  expect_same r2-c.safetensors twin-c.safetensors
  "$fixtures" same r2-c.safetensors ckpt-in.safetensors a.weight a.weight.exp_avg \
    b.weight b.weight.exp_avg c.bias d.weight e.table random.seed ||
    fail "the checkpoint saved on 2 ranks lost what it loaded"
fi

# Checkpoint directories are gathered the same way: from the same single
# file (the format before directories), the directories of 2 and 4 ranks
# are the twin's byte for byte (the padded a.weight without its padding)
# and hold what the single file does; a directory saved on 2 ranks resumes
# on 4 and on one alike.
if expect_ok twin-cd "$run" twin.tpcx $resume --save-checkpoint twin-cd &&
   expect_ok r2-cd "$run" ranks2.tpcx $resume --save-checkpoint r2-cd --ranks 2 &&
   expect_ok r4-cd "$run" ranks4.tpcx $resume --save-checkpoint r4-cd --ranks 4; then
  grep '^step' r2-cd.txt >r2-cd.steps
  grep '^step 4 ' r2-cd.steps >/dev/null || fail "resumed on 2 ranks: $(cat r2-cd.raw)"
  grep '^step' twin-cd.txt | cmp -s - r2-cd.steps || fail "2 ranks printed other lines: $(cat r2-cd.raw)"
  diff -r r2-cd twin-cd >/dev/null || fail "the directory of 2 ranks differs from the twin's"
  diff -r r4-cd twin-cd >/dev/null || fail "the directory of 4 ranks differs from the twin's"
  [ -s twin-c.safetensors ] && { "$fixtures" same twin-cd/model.safetensors twin-c.safetensors \
    a.weight b.weight c.bias d.weight e.table &&
    "$fixtures" same twin-cd/training_state.safetensors twin-c.safetensors \
    a.weight.exp_avg b.weight.exp_avg step data.position eval.position; } ||
    fail "the directory does not hold what the single file does"
  if expect_ok r4-cd2 "$run" ranks4.tpcx --load-checkpoint r2-cd $batch --save-checkpoint r4-cd2 --ranks 4 &&
     expect_ok twin-cd2 "$run" twin.tpcx --load-checkpoint r2-cd $batch --save-checkpoint twin-cd2; then
    grep '^step' twin-cd2.txt >twin-cd2.steps
    grep '^step 5 ' twin-cd2.steps >/dev/null || fail "resumed from r2-cd: $(cat twin-cd2.raw)"
    grep '^step' r4-cd2.txt | cmp -s - twin-cd2.steps || fail "resumed on 4 ranks: other lines: $(cat r4-cd2.raw)"
    diff -r r4-cd2 twin-cd2 >/dev/null || fail "resumed from a directory on 4 ranks: other files than on one"
  fi
fi

echo "tpc_run_ranks.sh: $checks runs, $failures failed"
[ "$failures" -eq 0 ]
