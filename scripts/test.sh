#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine and runs all tests:
#   Debian packages -> llama.cpp peer (npm) -> build -> unit + parity tests (CTest) -> unit tests
#   under ASan+UBSan -> server and thread-pool tests under TSan -> fuzzers (FUZZ_JOBS at a time).
# Environment: BUILD_DIR (default build), FUZZ_SECONDS (default 60, 0 skips fuzzing),
# CHANNEL_PEER_DIR (default ~/.cache/channel-peer), JOBS (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
export CHANNEL_PEER_DIR=${CHANNEL_PEER_DIR:-$HOME/.cache/channel-peer}
# The GPU tests fail instead of skipping when no Vulkan device is found: install-deps.sh
# installs lavapipe (mesa-vulkan-drivers), so here they always run.
export CHANNEL_REQUIRE_VULKAN=1

# Each step's line carries the clock and the minutes since the start, so a CI log shows which stage grew.
started=$SECONDS
step() { printf '\n==> %s (%s, %d min in)\n' "$*" "$(date -u +%H:%M:%S)" $(((SECONDS - started) / 60)) >&2; }

step "Debian packages"
scripts/install-deps.sh
step "llama.cpp peer (node-llama-cpp from npm) in $CHANNEL_PEER_DIR"
scripts/install-peer.sh "$CHANNEL_PEER_DIR" >/dev/null
step "build ($BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCHANNEL_PEER_DIR="$CHANNEL_PEER_DIR" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS"
step "unit and parity tests"
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
step "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer, with assertions ($BUILD_DIR-asan)"
# -g1: line tables only, enough for the sanitizers' stack traces, and a third less compile time
# than -g (14.0 against 9.9 s for session_test.cpp).
cmake -S . -B "$BUILD_DIR-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DCHANNEL_SANITIZE=ON -DCHANNEL_BUILD_BENCH=OFF -DCHANNEL_PEER_DIR="$CHANNEL_PEER_DIR" >/dev/null
# Only the unit-test binaries (the CLI, parity tools and benchmarks are not run under ASan).
unit_targets=()
for dir in tests/unit/*/; do unit_targets+=("channel_$(basename "$dir")_tests"); done
ninja -C "$BUILD_DIR-asan" -j "$JOBS" "${unit_targets[@]}"
# The 50,000-token stream is too slow unoptimized, and the matrix kernels' numerics against the CPU
# (VulkanMatmul.MatchesCpuBackend: shader arithmetic on lavapipe, no host memory handling beyond
# what the other GPU tests do) take minutes under ASan: the Release run above covers both. Of the
# whole-model GPU-vs-CPU geometries (Vulkan host code run once per geometry, and the instrumented
# CPU backend's reference forward passes, most of their time here), two of VulkanForward's and two
# of VulkanEModel's run here, one of each architecture or kind; the Release run has them all.
asan_skipped='Stream\.|VulkanMatmul\.MatchesCpuBackend'
asan_skipped+='|VulkanForward\.LogitsMatchTheCpuBackend/(gemma3_f32|gemma3_q4|gemma3_q8_0_hd256|gemma3_bf16|gemma4_f16|gemma4_f32|gemma4_q8)'
asan_skipped+='|VulkanEModel\.LogitsMatchTheCpuBackend/(f32_ple|f16|bf16|q8_0)'
ctest --test-dir "$BUILD_DIR-asan" --output-on-failure -j "$JOBS" -L unit -E "$asan_skipped"
step "server and thread-pool tests under ThreadSanitizer ($BUILD_DIR-tsan)"
cmake -S . -B "$BUILD_DIR-tsan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" \
  -DCHANNEL_SANITIZE_THREAD=ON -DCHANNEL_BUILD_BENCH=OFF -DCHANNEL_PEER_DIR="$CHANNEL_PEER_DIR" >/dev/null
ninja -C "$BUILD_DIR-tsan" -j "$JOBS" channel_server_tests channel_core_tests
# halt_on_error: a data race fails the step even where the test itself would pass.
for t in channel_server_tests channel_core_tests; do
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$BUILD_DIR-tsan/tests/$t"
done
if [ "${FUZZ_SECONDS:-60}" != 0 ]; then
  step "fuzzers (${FUZZ_SECONDS:-60} s each)"
  FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/run-fuzzers.sh
fi
step "all tests passed"
