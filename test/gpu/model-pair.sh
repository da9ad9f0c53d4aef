# test/gpu/model-pair.sh: sourced by device-check.sh (its models and ranks
# stages) and emulated-configs.sh: one executable's two training steps on
# the CPU and on the device under test, compared by compare_dumps.py. Reads
# BUILD (the build with tpc-run), CARRY (models/NAME.tpcx), WORK (the runs'
# dumps and logs), DUT (the device under test), PY (python3) and
# TPC_GPU_RUN_TIMEOUT (tpc-run --timeout, where set).

compare_dumps=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/compare_dumps.py

# The path of a built program (tools land in bin/, tests in the build root).
findbin() {
  local dir
  for dir in "$BUILD/bin" "$BUILD"; do
    [ -x "$dir/$1" ] && [ -f "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  find "$BUILD" -maxdepth 3 -type f -name "$1" -perm -u+x 2>/dev/null | head -n 1
}

# Two training steps of $1 on the CPU (ref) and on $DUT (dut, cuda); $2 the
# tolerance; $3 the label of the comparison (default $1); $4 the ranks (the
# executable's mesh size; default 1); $5 the tensors of the checkpoint left
# out (a regular expression; default GPT-2's attention bias, below). Where
# $CARRY/models/$1-f32.tpcx exists (a bf16 model's float32 twin: the same
# model, mesh and flags in float32), it runs too, on the CPU (f32), and a
# tensor over the tolerance passes where the device's run is no farther from
# it than the CPU's (compare_dumps.py --reference).
model_pair() {
  local name=$1 tol=$2 label=${3:-$1} ranks=${4:-1}
  local skip=${5:-'attn\.c_attn\.bias'} run side dev exe rc=0
  local launch=() sides=(ref dut) reference=() checkpoint_reference=()
  [ "$ranks" -gt 1 ] && launch=(--ranks "$ranks")
  # A hang ends sooner than tpc-run's default 600 s where asked.
  [ -n "${TPC_GPU_RUN_TIMEOUT:-}" ] && launch+=(--timeout "$TPC_GPU_RUN_TIMEOUT")
  if [ -f "$CARRY/models/$name-f32.tpcx" ]; then
    sides=(f32 ref dut)
    reference=(--reference "$WORK/$name-f32-out.safetensors"
      --reference "$WORK/$name-f32-grads.safetensors")
    checkpoint_reference=(--reference "$WORK/$name-f32-ckpt.safetensors")
  fi
  run=$(findbin tpc-run)
  for side in "${sides[@]}"; do
    dev=cpu exe=$name
    [ $side = dut ] && dev=$DUT
    [ $side = f32 ] && exe=$name-f32
    # The CPU's runs of a model are the same for every device-side variant
    # (TPCRT_CUDA_ATTENTION, TPCRT_CUDA_FUSIONS): made once per script run.
    if [ $side != dut ] && [ -f "$WORK/$name-$side.ok" ]; then
      echo "== $exe on cpu ($side): the run above's"
      continue
    fi
    echo "== $exe on $dev ($side)${launch[*]:+, ${launch[*]}}"
    "$run" "$CARRY/models/$exe.tpcx" "${launch[@]}" --device "$dev" --init-seed 7 \
      --synthetic-seed 7 --steps 2 \
      --dump-grads "$WORK/$name-$side-grads.safetensors" \
      --dump-outputs "$WORK/$name-$side-out.safetensors" \
      --save-checkpoint "$WORK/$name-$side-ckpt.safetensors" \
      >"$WORK/$name-$side.txt" 2>&1
    rc=$?
    cat "$WORK/$name-$side.txt"
    [ $rc -eq 0 ] || { echo "$exe: tpc-run --device $dev failed ($rc)"; return 1; }
    [ $side != dut ] && : >"$WORK/$name-$side.ok"
    [ $side = dut ] && in_use_record "$label" "$WORK/$name-dut.txt"
  done
  # The loss of both steps (the second after the first update), grad_norm
  # and the first step's gradients; then the params and AdamW state after
  # the steps (params and exp_avg_sq within twice the tolerance: AdamW
  # doubles the gradients' relative difference there, --after-adamw), less
  # GPT-2's attention bias, whose key third has an exact zero gradient that
  # AdamW turns into noise, and less the elements whose first gradients
  # disagree (near a sign change, where AdamW steps +-lr either way), each
  # within the steps' lr (--grads, --lr-log; compare_dumps.py).
  "$PY" "$compare_dumps" --tol "$tol" --label "$label" \
    --json "$WORK/compare.jsonl" "${reference[@]}" \
    --logs "$WORK/$name-ref.txt" "$WORK/$name-dut.txt" \
    "$WORK/$name-ref-out.safetensors" "$WORK/$name-dut-out.safetensors" \
    "$WORK/$name-ref-grads.safetensors" "$WORK/$name-dut-grads.safetensors" \
    || rc=1
  "$PY" "$compare_dumps" --tol "$tol" --label "$label" \
    --json "$WORK/compare.jsonl" --skip "$skip" --after-adamw \
    --grads "$WORK/$name-ref-grads.safetensors" \
    "$WORK/$name-dut-grads.safetensors" --lr-log "$WORK/$name-ref.txt" \
    "${checkpoint_reference[@]}" \
    "$WORK/$name-ref-ckpt.safetensors" "$WORK/$name-dut-ckpt.safetensors" \
    || rc=1
  return $rc
}

# The device's memory in use after the first step and after the last
# (tpc-run's device_in_use_bytes lines, one per rank; --device cuda): each
# rank's difference appended to $WORK/in-use.txt as "LABEL rank R BYTES".
in_use_record() {
  awk -v label="$1" '$1 == "tpc-run:" && $4 == "device_in_use_bytes" {
    print label, "rank", $3, $10 - $8 }' "$2" >>"$WORK/in-use.txt"
}

# One line for the summary from in-use.txt's records since the last call
# (then cleared): whether any run's rank took device memory after step 1.
in_use_summary() {
  local file=$WORK/in-use.txt
  [ -s "$file" ] || { echo "  device memory in use after step 1 = after the last step: no device_in_use_bytes lines"; return; }
  awk '{ runs[$1] = 1; if ($4 != 0) { grew[$1] = grew[$1] " rank " $3 " " ($4 > 0 ? "+" : "") $4 } }
    END {
      n = 0; for (r in runs) n++
      bad = ""; for (r in grew) bad = bad (bad == "" ? "" : ";") " " r ":" grew[r] " bytes"
      if (bad == "") printf "  device memory in use after step 1 = after the last step (driver): yes, %d runs\n", n
      else printf "  device memory in use after step 1 = after the last step (driver): no,%s\n", bad
    }' "$file"
  : >"$file"
}
