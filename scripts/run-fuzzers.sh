#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz, writes their seed corpora, then runs each
# tests/fuzz/fuzz_*.cpp target for FUZZ_SECONDS seconds (default 60). Exits non-zero if any target
# crashes; crashing inputs are kept under build-fuzz/artifacts/<target>/, logs under build-fuzz/logs/.
# FUZZ_JOBS targets run at a time (default: the number of cores). FUZZ_RUNS=N runs each target for
# N inputs instead of a time; FUZZ_KEEP_CORPUS=DIR seeds each target's corpus from DIR/<name> too and
# merges what it found that adds coverage back into DIR/<name> (tests/fuzz/corpus keeps them).
#   FUZZ_SECONDS=600 scripts/run-fuzzers.sh          # longer runs
#   FUZZ_RUNS=1000000 FUZZ_KEEP_CORPUS=tests/fuzz/corpus scripts/run-fuzzers.sh   # the deep runs
#   scripts/run-fuzzers.sh fuzz_gguf                 # only the named targets
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
runs=${FUZZ_RUNS:-0}
keep=${FUZZ_KEEP_CORPUS:+$(realpath -m "$FUZZ_KEEP_CORPUS")}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCHANNEL_FUZZ=ON \
  -DCHANNEL_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for source in "$root"/tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi
build_targets=("${targets[@]}")
for target in "${targets[@]}"; do
  [ -f "$root/tests/fuzz/make_${target#fuzz_}_corpus.cpp" ] && build_targets+=("make_${target#fuzz_}_corpus")
done
ninja -C "$build" -j "${FUZZ_BUILD_JOBS:-2}" "${build_targets[@]}"

# FUZZ_JOBS targets at a time (default: one per core); each one's output goes to its log, which
# is printed when it finds a crash.
jobs=${FUZZ_JOBS:-$(nproc)}
logs=$build/logs
mkdir -p "$logs"
run_target() {
  local target=$1 name=${1#fuzz_}
  local corpus=$build/corpus/$name artifacts=$build/artifacts/$1
  mkdir -p "$corpus" "$artifacts"
  if [ -x "$build/tests/fuzz/make_${name}_corpus" ]; then "$build/tests/fuzz/make_${name}_corpus" "$corpus"; fi
  if [ -n "$keep" ] && [ -d "$keep/$name" ]; then cp -n "$keep/$name"/* "$corpus"/ 2>/dev/null || true; fi
  local options=(-timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ "$runs" -gt 0 ]; then options+=(-runs="$runs"); else options+=(-max_total_time="$seconds"); fi
  [ -f "$root/tests/fuzz/$target.dict" ] && options+=(-dict="$root/tests/fuzz/$target.dict")
  "$build/tests/fuzz/$target" "${options[@]}" "$corpus" > "$logs/$target.log" 2>&1 || return
  if [ -n "$keep" ]; then
    mkdir -p "$keep/$name"
    "$build/tests/fuzz/$target" -merge=1 "$keep/$name" "$corpus" > "$logs/$target.merge.log" 2>&1
  fi
}
declare -A pids=()
failed=()
collect() {  # waits for one running target and records its outcome
  local done_pid
  wait -n -p done_pid "${!pids[@]}" && status=0 || status=$?
  local target=${pids[$done_pid]}
  unset "pids[$done_pid]"
  if [ "$status" -ne 0 ]; then
    failed+=("$target")
    tail -40 "$logs/$target.log" >&2
  else
    local log=$logs/$target.log
    echo "== $target: $(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}') runs in" \
      "$(grep -m1 -o 'Done [0-9]* runs in [0-9]* second' "$log" | awk '{print $5}')s," \
      "$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)" >&2
  fi
}
for target in "${targets[@]}"; do
  while [ ${#pids[@]} -ge "$jobs" ]; do collect; done
  run_target "$target" &
  pids[$!]=$target
done
while [ ${#pids[@]} -gt 0 ]; do collect; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzers that found crashes: ${failed[*]} (inputs in $build/artifacts/)" >&2
  exit 1
fi
echo "all fuzzers ran without crashes: ${targets[*]}" >&2
