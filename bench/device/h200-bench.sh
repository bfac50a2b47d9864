#!/usr/bin/env bash
# Runs ON the GPU machine (device tool), from the repository root, with .devrun, .gl and .peer
# carried (bench/device/pack.sh makes them). One call measures, on one model file:
#   1. the device as Channel sees it (channel gpu list);
#   2. GPU against CPU logits on small random models (all weight types; a kernel smoke test);
#   3. channel bench --gpu on PRESET (default gemma3-12b: Gemma 3 12B geometry, Q4_0 layers, Q8_0
#      output), written by channel model synth;
#   4. llama.cpp's llama-bench, built with CUDA from the peer's source while 2 and 3 run, on the
#      same file: pp512, tg at depth 0 and tg at depth 3968 (the full ring's attention length).
# Results: $OUT/bench.json (ours), $OUT/peer-bench.txt, $OUT/parity.txt, logs. Prints a summary.
#   5. (PROFILE=1) GPU time per stage of a short decode (CHANNEL_VULKAN_PROFILE=1);
#   6. (PROBE_PRESET=NAME) channel bench --gpu on a second preset whose vocabulary has its turn
#      tokens (the Gemma 3 presets carry the Gemma 4 vocabulary, so their probe and snapshot
#      figures are skipped), e.g. gemma4-12b.
#   7. (MATVEC="SHAPE SHAPE ...") channel_vulkan_matvec_bench with these matrix-vector shapes
#      (threads,rows,subgroup_rows; "default" for the built-in one): GB/s per decode matrix.
#   8. (SUBMIT="1 4 48") decode at depth 0 with each of these --layers-per-submit.
#   9. (GPU_TESTS=1) the GPU unit tests (tests/unit/gpu: kernels and the backend against the CPU).
#  10. (PROMPTS="16 64 128") prefill of these smaller batches too, by both engines (channel bench
#      -n 1 -r 5 each; llama-bench -p 16,64,128 beside its pp512).
# PEER=0 skips llama.cpp (its build takes most of the call).
# usage: [PEER=0] [GPU_TESTS=1] [PROFILE=1] [PROBE_PRESET=gemma4-12b] [MATVEC="default 128,8,2"] [SUBMIT="1 4"] [PROMPTS="16 64"] bash bench/device/h200-bench.sh [PRESET] [GEN_TOKENS]
set -uo pipefail
PRESET=${1:-gemma3-12b}
GEN=${2:-64}
source "$PWD/bench/device/preamble.sh"
source "$R/bench/device/vulkan-env.sh"

# llama.cpp with CUDA for sm_90 (about 4.5 minutes on 16 cores), in the background.
[ "${PEER:-1}" = 0 ] || ( mkdir -p /tmp/peer-src && tar xzf "$R/.peer/llama-src.tgz" -C /tmp/peer-src &&
  cmake -S /tmp/peer-src -B /tmp/peer-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF > "$OUT/peer-cmake.log" 2>&1 &&
  ninja -C /tmp/peer-build llama-bench > "$OUT/peer-ninja.log" 2>&1; echo "peer build rc=$?" > "$OUT/peer-build.txt" ) &
peer=$!

echo "== channel gpu list"; "$CH" gpu list 2>&1 | tee "$OUT/gpu-list.txt"

echo "== GPU vs CPU logits (small random models)"
for arch in gemma3 gemma4; do
  for type in f32 f16 bf16 q8_0 q4_0; do
    m=/tmp/small-$arch-$type.gguf
    "$CH" model synth --arch $arch --type $type --vocab "$VOCAB" --out $m 2>/dev/null
    toks=$(python3 -c "import random; random.seed(7); print(','.join(['2'] + [str(random.randrange(1000, 200000)) for _ in range(63)]))")
    for b in cpu vulkan; do "$CH" eval --model $m --tokens "$toks" --backend $b -t 16 --logits-out /tmp/l-$b.bin > /tmp/am-$b.txt 2>/tmp/eval-$b.err || tail -2 /tmp/eval-$b.err; done
    python3 - "$arch" "$type" <<'PY' | tee -a "$OUT/parity.txt"
import sys, numpy as np
a = np.fromfile('/tmp/l-cpu.bin', dtype=np.float32); b = np.fromfile('/tmp/l-vulkan.bin', dtype=np.float32)
x = open('/tmp/am-cpu.txt').read().split()[1:]; y = open('/tmp/am-vulkan.txt').read().split()[1:]
rel = np.linalg.norm(a - b) / np.linalg.norm(a) if a.size == b.size and a.size else float('nan')
print(f"{sys.argv[1]} {sys.argv[2]}: rel L2 {rel:.3e}, argmax {sum(i == j for i, j in zip(x, y))}/{len(x)}")
PY
  done
done

if [ "${GPU_TESTS:-0}" = 1 ]; then
  echo "== GPU unit tests (every kernel against the CPU path) on this device"
  CHANNEL_REQUIRE_VULKAN=1 timeout 300 "$R/.devrun/channel_gpu_tests" 2>&1 | tee "$OUT/gpu-tests.txt" |
    grep -E "^\[  (FAILED|PASSED|SKIPPED) |tests ran" | tail -15
fi

if [ -n "${MATVEC:-}" ]; then
  echo "== matrix-vector kernels (GB/s per decode matrix of Gemma 3 12B)"
  args=(); for shape in $MATVEC; do [ "$shape" = default ] && args+=(--shape "") || args+=(--shape "$shape"); done
  timeout 300 "$R/.devrun/channel_vulkan_matvec_bench" "${args[@]}" 2>&1 | tee "$OUT/matvec.txt"
fi

echo "== model: $PRESET"
/usr/bin/time -v "$CH" model synth --preset "$PRESET" --vocab "$VOCAB" --out /tmp/bench-model.gguf 2> "$OUT/synth.log" | tail -1
grep -E "Elapsed|Maximum resident" "$OUT/synth.log"

echo "== channel run --gpu (a chat turn on the bench model; random weights: the text is noise)"
timeout 120 "$CH" run --gpu --model /tmp/bench-model.gguf --prompt "Write one sentence about the sea." -n 16 2>&1 | tail -3

echo "== channel bench --gpu"
timeout 300 "$CH" bench --gpu -m /tmp/bench-model.gguf -p 512 -n "$GEN" -r 3 --json 2> "$OUT/bench.log" | tee "$OUT/bench.txt"
tail -1 "$OUT/bench.txt" > "$OUT/bench.json"
tail -3 "$OUT/bench.log"

if [ "${PROFILE:-0}" = 1 ]; then
  echo "== profile: prefill 16 tokens and decode 2 x 32 at depth 0, stages summed"
  CHANNEL_VULKAN_PROFILE=1 timeout 120 "$CH" bench --gpu -m /tmp/bench-model.gguf -p 16 -n 32 -r 1 --no-full-ring 2>&1 |
    grep -A60 "vulkan profile" | head -60 | tee "$OUT/profile.txt"
  echo "== profile: the same, then 2 x 32 tokens with the ring full (after a 4032-token prefill)"
  CHANNEL_VULKAN_PROFILE=1 timeout 180 "$CH" bench --gpu -m /tmp/bench-model.gguf -p 16 -n 32 -r 1 2>&1 |
    grep -A60 "vulkan profile" | head -60 | tee "$OUT/profile-ring.txt"
fi
for lps in ${SUBMIT:-}; do
  echo "== decode with --layers-per-submit $lps"
  timeout 120 "$CH" bench --gpu --layers-per-submit "$lps" -m /tmp/bench-model.gguf -p 64 -n 64 -r 2 --no-full-ring 2>/dev/null |
    grep -E "^decode"
done
for p in ${PROMPTS:-}; do
  timeout 120 "$CH" bench --gpu -m /tmp/bench-model.gguf -p "$p" -n 1 -r 5 --no-full-ring 2>/dev/null | grep -E "^prefill"
done
if [ -n "${PROBE_PRESET:-}" ]; then
  echo "== channel bench --gpu on $PROBE_PRESET (probe and snapshot figures)"
  "$CH" model synth --preset "$PROBE_PRESET" --vocab "$VOCAB" --out /tmp/probe-model.gguf 2> /dev/null
  timeout 200 "$CH" bench --gpu -m /tmp/probe-model.gguf -p 512 -n "$GEN" -r 3 --no-full-ring --json 2> "$OUT/bench-probe.log" |
    tee "$OUT/bench-probe.txt"
fi
[ "${PEER:-1}" = 0 ] && exit 0
echo "== llama-bench (CUDA)"
wait $peer; cat "$OUT/peer-build.txt"
if [ -x /tmp/peer-build/bin/llama-bench ]; then
  prompts=$(echo ${PROMPTS:-} 512 | tr ' ' ',')
  /tmp/peer-build/bin/llama-bench -m /tmp/bench-model.gguf -ngl 99 -fa 1 -p "$prompts" -n "$GEN" -r 3 2>&1 | tee "$OUT/peer-bench.txt"
  /tmp/peer-build/bin/llama-bench -m /tmp/bench-model.gguf -ngl 99 -fa 1 -p 0 -n "$GEN" -d 3968 -r 3 2>&1 | tee -a "$OUT/peer-bench.txt"
else
  tail -20 "$OUT/peer-ninja.log"
fi
