# test/gpu/twin-flags.sh: sourced by models.sh and emulated-random.sh. A
# bf16 configuration's float32 twin (model_pair's reference, model-pair.sh)
# is the same model, mesh and flags without the bf16 ones:
# twin_flags ARGS... sets TWIN_FLAGS to ARGS less `--dtype X` and
# `--grad-reduce-dtype X`.
twin_flags() {
  local skip=0 a
  TWIN_FLAGS=()
  for a in "$@"; do
    if [ $skip = 1 ]; then skip=0; continue; fi
    case $a in
      --dtype|--grad-reduce-dtype) skip=1; continue ;;
    esac
    TWIN_FLAGS+=("$a")
  done
}
