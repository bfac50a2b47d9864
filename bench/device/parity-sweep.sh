#!/usr/bin/env bash
# Runs ON a many-core device machine (device tool), from the repository root, with .devrun,
# .peer/bins and .peer/vocab-gemma4.gguf carried (bench/device/pack.sh makes them; .gl too for
# BACKEND=vulkan): the logits parity sweep (tests/parity/logits/sweep_parity.py) over SHAPES random
# geometries against the pinned llama.cpp CPU variant, JOBS cases at a time with THREADS threads per
# engine. BACKEND=cpu: Channel's SIMD targets take turns, only CPUs are used; BACKEND=vulkan: Channel
# runs every case on the GPU. Results: $OUT/sweep.md (tables), $OUT/sweep.log (progress),
# $OUT/cpu.txt (the CPU).
# usage: bash bench/device/parity-sweep.sh [SHAPES=200] [JOBS=8] [THREADS=2] [ARCHS=gemma3,gemma4] [BACKEND=cpu]
set -uo pipefail
SHAPES=${1:-200}
JOBS=${2:-8}
THREADS=${3:-2}
ARCHS=${4:-gemma3,gemma4}
BACKEND=${5:-cpu}
source "$PWD/bench/device/preamble.sh"
# llama_oracle finds the prebuilt libraries by the RUNPATH it was linked with (the peer's
# directory on the build machine): put them there.
libdir=$(readelf -d "$R/.devrun/llama_oracle" | sed -n 's/.*RUNPATH.*\[\(.*\)\]/\1/p')
mkdir -p "$libdir" && cp "$R"/.peer/bins/*.so "$libdir"/
if [ "$BACKEND" = vulkan ]; then
  source "$R/bench/device/vulkan-env.sh"  # also puts .devrun/lib on the library path
  "$R/.devrun/channel" gpu list
else
  export LD_LIBRARY_PATH=$R/.devrun/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
{ grep -m1 'model name' /proc/cpuinfo; nproc; "$R/.devrun/llama_oracle" variants; } 2>&1 | tee "$OUT/cpu.txt"
python3 "$R/tests/parity/logits/sweep_parity.py" --shapes "$SHAPES" --jobs "$JOBS" --threads "$THREADS" \
  --archs "$ARCHS" --backend "$BACKEND" --channel "$R/.devrun/channel" --oracle "$R/.devrun/llama_oracle" \
  --vocab "$R/.peer/vocab-gemma4.gguf" --workdir /tmp/sweep > "$OUT/sweep.log" 2>&1
rc=$?
cp /tmp/sweep/sweep.md "$OUT/" 2>/dev/null
tail -n 40 "$OUT/sweep.log"
echo "sweep exit code $rc"
exit $rc
