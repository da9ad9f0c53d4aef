#!/bin/sh
# Usage: run_hf.sh VENV SCRIPT [ARGS...]
#
# Runs a Hugging Face test script with VENV's Python (scripts/setup.sh
# creates build/hf-venv and installs transformers into it). Without that
# venv the test exits 77 and ctest reports it skipped, never passed; the
# script itself skips the same way when transformers does not import.
venv=$1
shift
if [ ! -x "$venv/bin/python" ]; then
  echo "skipped: no Hugging Face venv at $venv (scripts/setup.sh creates it and" \
    "installs transformers from PyPI; it needs the network)"
  exit 77
fi
exec "$venv/bin/python" "$@"
