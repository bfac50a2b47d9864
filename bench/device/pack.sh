#!/usr/bin/env bash
# Prepares, on the build machine, what the bench/device scripts need on a GPU machine that
# has no network: the channel binary, the Vulkan matrix-vector benchmark, the GPU unit tests, the
# parity oracle and their two shared libraries (.devrun/), the Vulkan loader
# as a Debian package (.gl/), and llama.cpp's source, its prebuilt libraries and the Gemma 4
# vocabulary from the npm peer (.peer/). All three folders are git-ignored locally (.git/info/exclude) and named in the
# device call's carry list.
# usage: bench/device/pack.sh [BUILD_DIR=build] [all|cpu|gpu]   (from the repository root, after a build)
#   all is over the device tool's 64 MiB beside the tracked tree; cpu and gpu fit:
#   cpu: only what cpu-bench.sh needs, small enough for the device tool's 64 MiB with the tracked
#        tree (~26 MB since models/channel-tiny.gguf is tracked): .devrun/channel (and
#        .devrun/channel-base from $BASE, another channel binary, for an A/B), its libraries, the
#        vocabulary gzipped (preamble.sh unpacks it) and .peercpu with two CPU variants only;
#        carry [".devrun", ".peer", ".peercpu"], SCAN_REPEAT=0 (no Vulkan loader in .gl).
#   gpu: what h200-bench.sh and h200-ab.sh need (~36 MB): .devrun/channel, channel_gpu_tests and
#        the matrix-vector benchmark (and .devrun/channel_base from $BASE for h200-ab.sh), their
#        libraries, .gl, and in .peer the vocabulary gzipped and llama.cpp's source (no prebuilt
#        libraries: the parity oracle is left out); carry [".devrun", ".gl", ".peer"].
set -euo pipefail
BUILD_DIR=${1:-build}
MODE=${2:-all}
PEER=${CHANNEL_PEER_DIR:-$HOME/.cache/channel-peer}
mkdir -p .git/info
for d in .gl .peer .devrun .peercpu; do grep -qx "/$d/" .git/info/exclude 2>/dev/null || echo "/$d/" >> .git/info/exclude; done
PEER_LIBS=$PEER/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
LB=$PEER/llama-bench/bin/llama-bench
copy_libraries() {  # the shared libraries the channel binary needs beside the system's
  for lib in libhwy.so.1 libfmt.so.9; do cp -L "$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')" .devrun/lib/; done
}
pack_llama_bench() {  # variant names...
  rm -rf .peercpu && mkdir -p .peercpu
  cp "$LB" .peercpu/
  for lib in libggml-base.so libggml.v0.4.0.so libllama-common.so libllama.v0.4.0.so; do cp -L "$PEER_LIBS/$lib" .peercpu/; done
  for variant in "$@"; do cp -L "$PEER_LIBS/libggml-cpu-$variant.so" .peercpu/; done
  du -sh .peercpu >&2
}

if [ "$MODE" = cpu ]; then
  [ -x "$LB" ] || { echo "pack.sh: no $LB (bench/peer/build-llama-bench.sh, or run bench/compare-llamacpp once)" >&2; exit 1; }
  rm -rf .devrun .peer && mkdir -p .devrun/lib .peer
  cp "$BUILD_DIR/channel" .devrun/
  [ -z "${BASE:-}" ] || cp "$BASE" .devrun/channel-base
  copy_libraries
  gzip -c "$PEER/src/models/ggml-vocab-gemma-4.gguf" > .peer/vocab-gemma4.gguf.gz
  pack_llama_bench sapphirerapids zen4
  du -sh .devrun .peer >&2
  exit 0
fi

rm -rf .devrun && mkdir -p .devrun/lib
cp "$BUILD_DIR/channel" "$BUILD_DIR/bench/channel_vulkan_matvec_bench" "$BUILD_DIR/tests/channel_gpu_tests" .devrun/
[ "$MODE" = gpu ] || cp "$BUILD_DIR/tests/parity/logits/llama_oracle" .devrun/
[ -z "${BASE:-}" ] || cp "$BASE" .devrun/channel_base
copy_libraries

mkdir -p .gl /tmp/amd64/partial
o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
# The loader, and the GL dispatch libraries NVIDIA's Vulkan driver links against.
[ -n "$(ls .gl/libvulkan1_*.deb 2>/dev/null)" ] || { apt-get $o update -qq && (cd .gl && apt-get $o download \
  libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2); }

mkdir -p .peer
[ -f .peer/llama-src.tgz ] || tar czf .peer/llama-src.tgz -C "$PEER/src" --exclude=./docs --exclude=./models \
  --exclude=./.git --exclude='./tools/server/public*' --exclude='*.gguf' .
if [ "$MODE" = gpu ]; then
  rm -rf .peer/bins .peer/vocab-gemma4.gguf
  gzip -c "$PEER/src/models/ggml-vocab-gemma-4.gguf" > .peer/vocab-gemma4.gguf.gz
  du -sh .devrun .gl .peer >&2
  exit 0
fi
rm -f .peer/vocab-gemma4.gguf.gz
cp "$PEER/src/models/ggml-vocab-gemma-4.gguf" .peer/vocab-gemma4.gguf
# The prebuilt llama.cpp libraries llama_oracle links (parity-sweep.sh): libllama, ggml and every
# CPU variant (the oracle pins one by the CPU's features); not the Node addon or llama-common.
rm -rf .peer/bins && mkdir -p .peer/bins
cp "$PEER_LIBS"/lib{llama.v,ggml.v,ggml-base,ggml-cpu-}*.so .peer/bins/
du -sh .devrun .gl .peer >&2

# llama.cpp's llama-bench (bench/peer/build-llama-bench.sh) with the prebuilt libraries and the
# CPU variants of current x86 servers, for cpu-bench.sh (.peercpu/, run from that directory so
# that ggml picks its variant as for its users).
if [ -x "$LB" ]; then pack_llama_bench sapphirerapids icelake zen4 haswell; fi
