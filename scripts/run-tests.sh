#!/usr/bin/env bash
# Sets up and builds (scripts/setup.sh), then runs every test through ctest:
# lit suites, GoogleTest unit tests, runtime tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
ctest --output-on-failure -j2 "$@"
