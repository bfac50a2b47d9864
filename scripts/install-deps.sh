#!/usr/bin/env bash
# Installs the Debian 12 packages Channel builds and tests with (run as root or with sudo).
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
packages=(
  cmake ninja-build g++          # build
  libfmt-dev                     # string formatting for messages and output
  libcli11-dev                   # command-line parsing
  nlohmann-json3-dev             # JSON output (model info --json, kv certify)
  libhwy-dev                     # Highway: portable SIMD with run-time dispatch
  libxxhash-dev                  # xxHash (XXH3): the checksums of snapshot and episode store files
  libgtest-dev                   # unit tests
  libbenchmark-dev               # micro-benchmarks under bench/
  libvulkan-dev                  # Vulkan headers (the GPU backend; the loader is opened at run time)
  libvulkan-volk-dev             # volk: compiled in, loads libvulkan.so.1 at run time instead of linking it
  glslc                          # GLSL -> SPIR-V compiler for the GPU backend's shaders (build time)
  mesa-vulkan-drivers            # lavapipe, the CPU Vulkan driver the GPU tests run on (CI, no GPU)
  clang libclang-rt-14-dev       # libFuzzer targets and sanitizer builds
  python3 python3-numpy          # parity test driver
  git
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs the llama.cpp peer (node-llama-cpp) for the parity tests; machines that already
# have Node.js from elsewhere keep it.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
fi
