#!/bin/sh
# Usage: unsupported-flags.sh TPC-COMPILE MODEL.mlir OUT.tpcx
#
# Runs tpc-compile once per flag of the user contract it does not implement
# yet, printing what it said and its exit status.
for flag in --train --optimizer=adamw --lr=0.1 --beta1=0.9 --beta2=0.99 \
    --eps=1e-8 --weight-decay=0.1 --decay-exclude=bias --momentum=0.9 \
    --grad-clip=1 --lr-schedule=cosine --warmup-steps=10 --min-lr=0 \
    --mesh=dp=1,pp=1,tp=1 --sequence-parallel --schedule=1f1b \
    --microbatches=4 --virtual-stages=2 --remat=full --memory-limit=80GB \
    --report=r.json; do
  "$1" "$2" -o "$3" "$flag" 2>&1
  echo "exit status $?"
done
