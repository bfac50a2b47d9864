#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried:
# prefill of small batches (the probes' and short turns' size) under each of several settings of
# the matrix kernels (CHANNEL_VULKAN_MATVEC_MAX_TOKENS: where the products switch from the
# matrix-vector kernel to the matrix kernels; CHANNEL_VULKAN_COOPMAT: the cooperative kernel's
# tile), then each setting's stages for a 16-token prefill (CHANNEL_VULKAN_PROFILE=1), and the
# discrete probe on the gemma4-12b preset.
# SETTINGS="default NAME=VALUE ..." ('+' joins several settings into one; "default" for none),
# PROMPTS="16 64 512" and REPS (repetitions of each prefill, median reported; 10 by default: a
# 16-token prefill is short enough for its spread to be large).
# usage: OUT=$OUT [SETTINGS=...] [PROMPTS=...] [REPS=10] bash bench/device/h200-small-batches.sh
set -uo pipefail
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
SETTINGS=${SETTINGS:-default CHANNEL_VULKAN_MATVEC_MAX_TOKENS=16}
"$CH" model synth --preset gemma3-12b --vocab "$VOCAB" --out /tmp/sb-model.gguf 2>/dev/null
for p in ${PROMPTS:-16 64 512}; do
  for setting in $SETTINGS; do
    env_setting=${setting/#default/}
    echo "== pp$p, $setting"
    env ${env_setting//+/ } timeout 120 "$CH" bench --gpu -m /tmp/sb-model.gguf -p "$p" -n 1 -r "${REPS:-10}" \
      --no-full-ring 2>/dev/null | grep -E "^prefill"
  done
done
for setting in $SETTINGS; do
  env_setting=${setting/#default/}
  echo "== pp16 stages, $setting"
  env ${env_setting//+/ } CHANNEL_VULKAN_PROFILE=1 timeout 120 "$CH" bench --gpu -m /tmp/sb-model.gguf -p 16 -n 1 \
    -r 3 --no-full-ring 2>&1 | grep -vE "^bench:" | tee "$OUT/pp16-profile-${setting//[^A-Za-z0-9_]/_}.txt" |
    grep -E "batch:|^prefill" | head -20
done
echo "== discrete probe on gemma4-12b, stages (a 16-token prefill and a 1-token decode included)"
"$CH" model synth --preset gemma4-12b --vocab "$VOCAB" --out /tmp/sb-probe.gguf 2>/dev/null
for setting in $SETTINGS; do
  env_setting=${setting/#default/}
  echo "== probe, $setting"
  env ${env_setting//+/ } timeout 120 "$CH" bench --gpu -m /tmp/sb-probe.gguf -p 16 -n 16 -r 5 --no-full-ring \
    2>/dev/null | grep -E "^(prefill|decode|discrete)"
done
