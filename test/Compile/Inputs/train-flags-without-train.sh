#!/bin/sh
# Usage: train-flags-without-train.sh TPC-COMPILE MODEL.mlir OUT.tpcx
#
# Runs tpc-compile once per training flag, without --train, printing what it
# said and its exit status.
for flag in --optimizer=adamw --lr=0.1 --beta1=0.9 --beta2=0.99 --eps=1e-8 \
    --weight-decay=0.1 --decay-exclude=bias --momentum=0.9 --grad-clip=1 \
    --lr-schedule=cosine --warmup-steps=10 --min-lr=0 --decay-steps=100 \
    --microbatches=4; do
  "$1" "$2" -o "$3" "$flag" 2>&1
  echo "exit status $?"
done
