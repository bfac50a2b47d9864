#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried:
# prefill of small batches (the probes' and short turns' size) against where the matrix products
# switch from the matrix-vector kernel to the matrix kernels (CHANNEL_VULKAN_MATVEC_MAX_TOKENS),
# then where a discrete probe's time goes (CHANNEL_VULKAN_PROFILE=1 on the gemma4-12b preset) and a
# pp512 prefill's stages, and a decode's stages with the ring full.
# usage: OUT=$OUT [MAX_TOKENS="8 16 64"] [PROMPTS="16 64 512"] bash bench/device/h200-small-batches.sh
set -uo pipefail
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
"$CH" model synth --preset gemma3-12b --vocab "$VOCAB" --out /tmp/sb-model.gguf 2>/dev/null
for p in ${PROMPTS:-16 64 512}; do
  for m in ${MAX_TOKENS:-8 16 64}; do
    echo "== pp$p, matrix-vector up to $m tokens"
    CHANNEL_VULKAN_MATVEC_MAX_TOKENS=$m timeout 120 "$CH" bench --gpu -m /tmp/sb-model.gguf -p "$p" -n 1 -r 3 \
      --no-full-ring 2>/dev/null | grep -E "^prefill"
  done
done
echo "== discrete probe on gemma4-12b, stages (a 16-token prefill and a 1-token decode included)"
"$CH" model synth --preset gemma4-12b --vocab "$VOCAB" --out /tmp/sb-probe.gguf 2>/dev/null
CHANNEL_VULKAN_PROFILE=1 timeout 200 "$CH" bench --gpu -m /tmp/sb-probe.gguf -p 16 -n 1 -r 1 --no-full-ring 2>&1 |
  grep -vE "^bench:" | tee "$OUT/probe-profile.txt" | head -90
echo "== pp512 at depth 0, stages"
CHANNEL_VULKAN_PROFILE=1 timeout 200 "$CH" bench --gpu -m /tmp/sb-model.gguf -p 512 -n 1 -r 1 --no-full-ring 2>&1 |
  grep -vE "^bench:" | tee "$OUT/pp512-profile.txt" | grep -E "batch:|host|wait|record|submit|prefill" | head -40
echo "== decode with the ring full (after a 4032-token prefill), stages"
CHANNEL_VULKAN_PROFILE=1 timeout 200 "$CH" bench --gpu -m /tmp/sb-model.gguf -p 16 -n 32 -r 1 2>&1 |
  grep -vE "^bench:" | tee "$OUT/ring-profile.txt" | grep -E "^  (attention|down|gate|qkv|wo|post|geglu|qk)|decode|copy|wait|record" | head -40
