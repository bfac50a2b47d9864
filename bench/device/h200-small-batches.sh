#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried:
# prefill of small batches (the probes' and short turns' size) under each of several settings of
# the matrix kernels (CHANNEL_VULKAN_MATVEC_MAX_TOKENS: where the products switch from the
# matrix-vector kernel to the matrix kernels; CHANNEL_VULKAN_COOPMAT: the cooperative kernel's
# tile), then each setting's stages for a 16-token prefill (CHANNEL_VULKAN_PROFILE=1), and the
# discrete probe on the gemma4-12b preset.
# SETTINGS="default NAME=VALUE ..." ('+' joins several settings into one; "default" for none),
# PROMPTS="16 64 512" and REPS (repetitions of each prefill, median reported; 10 by default: a
# 16-token prefill is short enough for its spread to be large). PROBE_DEPTHS="16 512 3900": the
# probe's tokens before it (its attention's length); PROBE_BINARIES="channel channel_base" also
# times the probe of other binaries in .devrun (with the default settings).
# usage: OUT=$OUT [SETTINGS=...] [PROMPTS=...] [REPS=10] [PROBE_DEPTHS=...] [PROBE_BINARIES=...] bash bench/device/h200-small-batches.sh
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
echo "== discrete probe on gemma4-12b after PROBE_DEPTHS tokens (prefill of that many, decode, probe)"
"$CH" model synth --preset gemma4-12b --vocab "$VOCAB" --out /tmp/sb-probe.gguf 2>/dev/null
for binary in ${PROBE_BINARIES:-channel}; do
  for setting in $SETTINGS; do
    env_setting=${setting/#default/}
    [ "$binary" = channel ] || [ "$setting" = default ] || continue  # other binaries: defaults only
    for depth in ${PROBE_DEPTHS:-16}; do
      echo "== probe after $depth tokens, $binary, $setting"
      env ${env_setting//+/ } timeout 150 "$R/.devrun/$binary" bench --gpu -m /tmp/sb-probe.gguf -p "$depth" -n 16 -r 5 \
        --no-full-ring 2>/dev/null | grep -E "^(prefill|decode|discrete)"
    done
  done
done
