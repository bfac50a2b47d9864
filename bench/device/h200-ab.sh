#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried:
# `channel bench --gpu` of two Channel binaries on one model file, in interleaved rounds, so that
# a change is judged against its parent in the same call (the machine's state moves between
# calls). .devrun/channel is the new binary, .devrun/channel_base the one to compare against
# (bench/device/pack.sh, then copy the base build's channel there).
# BINARIES="channel_base channel channel_other" names the binaries in .devrun to compare (default
# the first two). GPU_TESTS=1 first runs .devrun/channel_gpu_tests (every kernel against the CPU),
# with the defaults and then with each of VARIANTS' settings.
# VARIANTS="NAME=VALUE ..." also runs the new binary once per round with each environment setting
# (e.g. VARIANTS="CHANNEL_VULKAN_NORM_WORKGROUP=256 CHANNEL_VULKAN_NORM_WORKGROUP=1024"); '+' joins
# several settings into one variant (CHANNEL_VULKAN_MATVEC=128,2,2,2,4+CHANNEL_VULKAN_GATED_WORKGROUP=1024).
# BENCH_ARGS replaces the bench arguments (default "-p 512 -n GEN_TOKENS -r 3"; e.g. "-p 512 -n 1 -r 5
# --no-full-ring" to time prefill alone). GPU_TESTS=PATTERN runs only the tests that gtest filter names. MATVEC_SHAPES="T,R,SR,B,S ..."
# first times those matrix-vector shapes on the model's matrices (channel_vulkan_matvec_bench).
# RING_PROFILE="default NAME=VALUE ..." last profiles the new binary's ring-full decode once per
# variant (CHANNEL_VULKAN_PROFILE=1; "default" for no setting) and prints its attention stages;
# PROFILE_BINARIES="channel_base channel" profiles each of these binaries the same way.
# PROFILE_ARGS replaces those profiles' bench arguments (default "-p 16 -n 32 -r 1": the ring-full
# decode included; add --no-full-ring to profile decode at depth 0 alone).
# Each run's table lines (prefill, decode, probe, snapshot) and its warm-up figures (a shape's
# first run: the prefill warm-up records its pass) are kept.
# usage: [ROUNDS=2] [BINARIES=...] [BENCH_ARGS=...] [GPU_TESTS=1] [VARIANTS=...] [RING_PROFILE=...] [PROFILE_BINARIES=...] OUT=$OUT bash bench/device/h200-ab.sh [PRESET] [GEN_TOKENS]
set -uo pipefail
PRESET=${1:-gemma3-12b}
GEN=${2:-64}
BENCH_ARGS=${BENCH_ARGS:-"-p 512 -n $GEN -r 3"}
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
# The GPU tests that GPU_TESTS names, with the settings given ("" for none), saved under LABEL.
gpu_tests() {  # settings label
  env $1 CHANNEL_REQUIRE_VULKAN=1 timeout 300 "$R/.devrun/channel_gpu_tests" --gtest_filter="${GPU_TESTS/#1/*}" 2>&1 |
    tee "$OUT/gpu-tests$2.txt" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" | tail -15
}
if [ "${GPU_TESTS:-0}" != 0 ]; then
  echo "== GPU unit tests"
  gpu_tests "" ""
  for variant in ${VARIANTS:-}; do  # the same tests under each setting the variants time
    echo "== GPU unit tests with $variant"
    gpu_tests "${variant//+/ }" "-${variant//[^A-Za-z0-9_]/_}"
  done
fi
if [ -n "${MATVEC_SHAPES:-}" ]; then
  echo "== matrix-vector shapes"
  timeout 200 "$R/.devrun/channel_vulkan_matvec_bench" $(printf -- '--shape %s ' $MATVEC_SHAPES) 2>&1 | tee "$OUT/matvec.txt"
fi
"$R/.devrun/channel" model synth --preset "$PRESET" --vocab "$R/.peer/vocab-gemma4.gguf" --out /tmp/ab-model.gguf 2>/dev/null
for round in $(seq "${ROUNDS:-2}"); do
  for binary in ${BINARIES:-channel_base channel}; do
    echo "== round $round: $binary"
    timeout 200 "$R/.devrun/$binary" bench --gpu -m /tmp/ab-model.gguf $BENCH_ARGS --json 2>/tmp/ab-err.txt |
      grep -E "^(prefill|decode|discrete|snapshot)" | tee -a "$OUT/ab-$binary.txt"
    grep "warm-up" /tmp/ab-err.txt | tee -a "$OUT/ab-$binary.txt"
  done
  for variant in ${VARIANTS:-}; do
    echo "== round $round: channel with $variant"
    env ${variant//+/ } timeout 200 "$R/.devrun/channel" bench --gpu -m /tmp/ab-model.gguf $BENCH_ARGS --json \
      2>/tmp/ab-err.txt | grep -E "^(prefill|decode|discrete|snapshot)" | tee -a "$OUT/ab-${variant//[^A-Za-z0-9_]/_}.txt"
    grep "warm-up" /tmp/ab-err.txt | tee -a "$OUT/ab-${variant//[^A-Za-z0-9_]/_}.txt"
  done
done
# A profile of one binary with one setting ("" for none), saved under LABEL: by default of a run
# whose decode includes the full ring (PROFILE_ARGS can leave it out).
ring_profile() {  # binary setting label
  echo "== profile (${PROFILE_ARGS:--p 16 -n 32 -r 1}): $1 ${2:-(defaults)}"
  env $2 CHANNEL_VULKAN_PROFILE=1 timeout 180 "$R/.devrun/$1" bench --gpu -m /tmp/ab-model.gguf \
    ${PROFILE_ARGS:--p 16 -n 32 -r 1} 2>&1 | grep -E -A60 "vulkan profile|^decode" | tee "$OUT/ring-profile-$3.txt" |
    grep -E "profile|attention|norm|^decode"
}
for variant in ${RING_PROFILE:-}; do
  setting=${variant/#default/}
  ring_profile channel "${setting//+/ }" "${variant//[^A-Za-z0-9_]/_}"
done
for binary in ${PROFILE_BINARIES:-}; do
  ring_profile "$binary" "" "$binary"
done
