#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried
# (bench/device/pack.sh build gpu): the driver's statistics of every pipeline a prefill and a few
# decode steps at depth 0 and with the ring full make (CHANNEL_VULKAN_PIPELINE_STATS=1: registers
# a thread on NVIDIA, which decide how many workgroups share a multiprocessor; the split-KV
# pipelines appear only with the ring full), after the device's listing and the statistics
# test. Saves them to $OUT/pipeline-stats.txt. BINARIES="channel_base channel" reads those
# binaries of .devrun in turn (default: channel), each line prefixed with the binary's name.
# usage: [BINARIES=...] OUT=$OUT bash bench/device/pipeline-stats.sh [PRESET=gemma3-1b] [PROMPT_TOKENS=512]
set -uo pipefail
PRESET=${1:-gemma3-1b}
PROMPT=${2:-512}
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
"$R/.devrun/channel" gpu list 2>&1 | grep -E "^Device|features|integer dot"
CHANNEL_REQUIRE_VULKAN=1 "$R/.devrun/channel_gpu_tests" --gtest_filter='VulkanPipelineStatistics*' 2>&1 |
  grep -E "^\[ +(OK|FAILED|SKIPPED) |Failure|Expected|Which" | head -20
"$R/.devrun/channel" model synth --preset "$PRESET" --vocab "$R/.peer/vocab-gemma4.gguf" --out /tmp/stats-model.gguf 2>/dev/null
for binary in ${BINARIES:-channel}; do
  CHANNEL_VULKAN_PIPELINE_STATS=1 timeout 180 "$R/.devrun/$binary" bench --gpu -m /tmp/stats-model.gguf -p "$PROMPT" -n 4 \
    -r 1 2>&1 | grep -E "vulkan pipeline|^prefill|^decode" | sed "s/^/$binary: /" | tee -a "$OUT/pipeline-stats.txt" |
    cut -c1-300
done
