#!/bin/sh
# Usage: exit-status.sh [--max-memory KB] COMMAND [ARGS...]
#
# Runs COMMAND, then prints "exit status N", so that a test can check that a
# refusal exits with exactly 1: not another code, not a signal (a crash shows
# as 128 + the signal number). --max-memory caps COMMAND's virtual memory
# (ulimit -v), so that allocating what an absurd config describes would fail
# instead of passing unnoticed.
if [ "$1" = "--max-memory" ]; then
  ulimit -v "$2" || exit 125
  shift 2
fi
"$@"
echo "exit status $?"
