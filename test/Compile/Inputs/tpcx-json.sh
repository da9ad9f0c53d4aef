#!/bin/sh
# Usage: tpcx-json.sh SCHEMA.fbs MODEL.tpcx WORKDIR
#
# Prints the FlatBuffer payload of a .tpcx file (what follows its 32-byte
# framing header) as JSON, default values included, so that a test can read
# every field tpc-compile wrote. Needs flatc (lit feature "flatc").
set -e
mkdir -p "$3"
tail -c +33 "$2" > "$3/payload.bin"
flatc --json --raw-binary --strict-json --defaults-json -o "$3" "$1" -- \
  "$3/payload.bin"
cat "$3/payload.json"
