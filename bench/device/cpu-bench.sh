#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun, .gl, .peer and
# .peercpu carried (bench/device/pack.sh makes them). Measures the machine's CPU side:
#   1. episodic memory's scan of 10,000 episodes of Gemma 3 12B's width (3840) with NT threads on
#      the CPU backend and on the GPU backend (SCAN_REPEAT times each, alternating), then with 1,
#      2, 4 and 8 threads (channel bench on a one-layer model of that width, as
#      docs/benchmarks.md describes);
#   2. Channel's CPU backend against llama.cpp's prebuilt CPU libraries (llama-bench, which loads
#      the best libggml-cpu variant for this CPU) on PRESET with NT threads, ROUNDS interleaved
#      rounds: prefill pp128 and decode tg64;
#   3. when .devrun/channel-base exists (another build of channel), it too in every round of 2,
#      for an A/B of the two builds.
# usage: [NT=16] [ROUNDS=3] [SCAN_REPEAT=1 (0: no scan)] bash bench/device/cpu-bench.sh [PRESET=gemma3-1b]
set -uo pipefail
PRESET=${1:-gemma3-1b}
NT=${NT:-16}
ROUNDS=${ROUNDS:-3}
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket|L3" | tee "$OUT/lscpu.txt"

if [ "${SCAN_REPEAT:-1}" != 0 ]; then
echo "== memory scan, 10,000 episodes of width 3840"
"$CH" model synth --arch gemma3 --vocab "$VOCAB" --out /tmp/w3840.gguf --layers 1 --embd 3840 --heads 16 \
  --kv-heads 8 --head-dim 256 --ffn 256 --type q4_0 --embedding-type q8_0 --period 1 2>/dev/null
# SCAN_REPEAT runs at NT threads (a scan's time moves between runs of the same binary), then one
# at each smaller thread count; each run prints its median of 9 and appends its JSON to scan.jsonl.
scan() {  # threads, extra options
  local t=$1; shift
  "$CH" bench --model /tmp/w3840.gguf -p 1 -n 1 -r 9 --no-full-ring --threads "$t" --json "$@" 2>/dev/null |
    tail -n 1 | tee -a "$OUT/scan.jsonl" | python3 -c "import json,sys; j=json.load(sys.stdin); d=j['memory_scan_device_ms']
print(f\"threads {j['memory_scan_threads']}: {j['memory_scan_ms']:.3f} ms, {j['memory_scan_gb_s']:.1f} GB/s of {j['memory_read_gb_s']:.1f} = {j['memory_scan_bandwidth_fraction']:.3f}\" + (f'; GPU {d:.3f} ms' if d else ''))"
}
for i in $(seq "${SCAN_REPEAT:-1}"); do scan "$NT"; scan "$NT" --gpu; done
for t in 1 2 4 8; do [ "$t" -lt "$NT" ] && scan "$t"; done
fi

echo "== CPU: Channel against llama.cpp on $PRESET, $NT threads, $ROUNDS rounds"
M=/tmp/$PRESET.gguf
"$CH" model synth --preset "$PRESET" --vocab "$VOCAB" --out "$M" 2>/dev/null
builds=("$CH"); [ -x "$R/.devrun/channel-base" ] && builds+=("$R/.devrun/channel-base")
for round in $(seq "$ROUNDS"); do
  (cd "$R/.peercpu" && ./llama-bench -m "$M" -t "$NT" -p 128 -n 64 -r 1 2>"$OUT/llama-bench.err") |
    grep -E "pp128|tg64" | sed "s/^/round $round llama.cpp /" | tee -a "$OUT/cpu.txt"
  for b in "${builds[@]}"; do
    "$b" bench --model "$M" -p 128 -n 64 -r 1 --no-full-ring --threads "$NT" 2>/dev/null |
      grep -E "^(prefill|decode)" | sed "s|^|round $round $(basename "$b") |" | tee -a "$OUT/cpu.txt"
  done
done
grep -m1 "load_backend: loaded CPU" "$OUT/llama-bench.err"
