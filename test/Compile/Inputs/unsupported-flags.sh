#!/bin/sh
# Usage: unsupported-flags.sh TPC-COMPILE MODEL.mlir OUT.tpcx
#
# Runs tpc-compile once per flag of the user contract it does not implement
# yet, first alone and then with --train, printing what it said and its exit
# status.
for train in "" --train; do
  for flag in --remat=auto --memory-limit=80GB; do
    "$1" "$2" -o "$3" $train "$flag" 2>&1
    echo "exit status $?"
  done
done
