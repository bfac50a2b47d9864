#!/usr/bin/env bash
# Sets up Channel on a fresh Debian 12 machine and runs one chat turn with the default model,
# channel-tiny (models/channel-tiny.gguf, committed: no download). It is a 19M-parameter Gemma 4
# trained by the project on a generated corpus (tools/train-tiny/README.md): it answers the
# questions of that corpus (capitals, colours, arithmetic, yes/no, tools) and little else. Pass
# MODEL=/path/to/gemma.gguf to chat with a real Gemma 3 or Gemma 4 GGUF instead.
#   scripts/demo.sh ["prompt"]
set -euo pipefail
cd "$(dirname "$0")/.."
PROMPT=${1:-"What is the capital of France?"}
BUILD_DIR=${BUILD_DIR:-build}

scripts/install-deps.sh
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$BUILD_DIR" channel
# Without --model, channel uses models/channel-tiny.gguf and says so on stderr.
"$BUILD_DIR/channel" run ${MODEL:+--model "$MODEL"} --prompt "$PROMPT" -n 48
