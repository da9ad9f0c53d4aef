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
  # The fuzz targets (issue 18): clang with libFuzzer and the sanitizers.
  clang-14 libclang-rt-14-dev
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

# ---------------------------------------------------------------------------
# Hugging Face tests (test/hf): a Python venv with transformers at
# build/hf-venv, over Debian's python3-torch (--system-site-packages, so
# /usr/bin/python3's torch is used, not a second one from PyPI). Idempotent:
# nothing is done when transformers already imports from it. Needs PyPI; if
# that fails, the setup goes on and the Hugging Face tests report themselves
# skipped.
HF_VENV=build/hf-venv
HF_TRANSFORMERS="transformers==4.45.*"
if "$HF_VENV/bin/python" -c "import transformers" >/dev/null 2>&1; then
  :
elif { [ -x "$HF_VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$HF_VENV"; } &&
     "$HF_VENV/bin/pip" install -q --disable-pip-version-check --retries 2 --timeout 30 \
       "$HF_TRANSFORMERS"; then
  echo "setup: installed $HF_TRANSFORMERS into $HF_VENV"
else
  echo "setup: could not install $HF_TRANSFORMERS into $HF_VENV (no network?):" \
    "the Hugging Face tests (ctest -R '^hf\.') will be reported skipped"
fi
