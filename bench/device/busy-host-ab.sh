#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun, .gl and .peer
# carried (bench/device/pack.sh gpu, then the base binary copied to .devrun/channel_base):
# `channel bench --gpu` of .devrun/channel_base and .devrun/channel on a quiet host, then with one
# spinning shell loop per CPU core (a host busy with other work: a build, a game), then quiet
# again, so that how much decode depends on the host waking in time is measured in one call.
# usage: bash bench/device/busy-host-ab.sh [PRESET] [GEN_TOKENS]
set -uo pipefail
PRESET=${1:-gemma3-12b}
GEN=${2:-64}
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
"$R/.devrun/channel" model synth --preset "$PRESET" --vocab "$R/.peer/vocab-gemma4.gguf" --out /tmp/busy-model.gguf 2>/dev/null
run() {  # binary, host state
  echo "== $1, $2 host"
  timeout 100 "$R/.devrun/$1" bench --gpu -m /tmp/busy-model.gguf -p 512 -n "$GEN" -r 3 2>/dev/null |
    grep -E "^(prefill|decode)"
}
run channel_base quiet
run channel quiet
spinners=()
for _ in $(seq "$(nproc)"); do ( while :; do :; done ) & spinners+=($!); done
run channel_base busy
run channel busy
run channel busy
run channel_base busy
kill "${spinners[@]}" 2>/dev/null
run channel quiet
run channel_base quiet
