#!/usr/bin/env bash
# Installs every package tpc needs on a Debian machine (idempotent: packages already
# present are skipped), then configures and builds into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache git
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  libgtest-dev libgmock-dev
  libflatbuffers-dev flatbuffers-compiler
  libopenmpi-dev openmpi-bin
  libopenblas-dev
  nlohmann-json3-dev
  # LLVMConfig.cmake links LLVMSupport against these.
  libzstd-dev libedit-dev libcurl4-openssl-dev zlib1g-dev libxml2-dev libffi-dev
  python3-torch python3-numpy
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j2
