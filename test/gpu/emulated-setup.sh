# test/gpu/emulated-setup.sh BUILD WORK: sourced by the emulated-*.sh
# scripts here. Sets root (the repository), build, work and backend (the
# CUDA backend compiled for the host, BUILD/lib/libtpcrt-cuda-emulated.so),
# stops where the build has none, and empties WORK (dumps/ and nccl/ in
# it).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
backend=$build/lib/libtpcrt-cuda-emulated.so
[ -f "$backend" ] || { echo "no $backend (a build without nvcc has none)"; exit 1; }
rm -rf "$work"
mkdir -p "$work/dumps" "$work/nccl"
