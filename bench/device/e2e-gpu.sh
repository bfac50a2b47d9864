#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun and .gl carried
# (bench/device/pack.sh): both clients' end-to-end suites with the engine on the GPU (--gpu), over
# channel-tiny's vocabulary (tests/reliability/scripted_tiny_vocab_model.json, as CTest's
# e2e_serve_*_gpu do on lavapipe), then `channel bench --gpu` on channel-tiny, the default model
# (its probe and snapshot figures need its turn tokens). The Node suite runs where node exists.
# usage: OUT=$OUT bash bench/device/e2e-gpu.sh
set -uo pipefail
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
export CHANNEL_BINARY=$R/.devrun/channel CHANNEL_VOCAB=$R/models/channel-tiny.gguf
export CHANNEL_E2E_SCRIPTED_MODEL=$R/tests/reliability/scripted_tiny_vocab_model.json CHANNEL_E2E_ENGINE_ARGS=--gpu
"$CHANNEL_BINARY" gpu list 2>&1 | head -3

echo "== Python end-to-end suite on the GPU"
(cd tests/e2e/python && time timeout 300 python3 -m unittest discover -s . -p 'test_*.py') > "$OUT/e2e-python.txt" 2>&1
tail -6 "$OUT/e2e-python.txt"

echo "== Node end-to-end suite on the GPU"
if command -v node > /dev/null; then
  (cd tests/e2e && timeout 300 node --test node/*.test.mjs) > "$OUT/e2e-node.txt" 2>&1
  grep -E "^# (tests|pass|fail|duration)" "$OUT/e2e-node.txt"
else
  echo "no node on this machine"
fi

echo "== channel bench --gpu on channel-tiny"
timeout 200 "$CHANNEL_BINARY" bench --gpu -p 512 -n 64 -r 3 --json 2> "$OUT/bench-tiny.log" | tee "$OUT/bench-tiny.txt"
