#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz, writes their seed corpora, then runs each
# tests/fuzz/fuzz_*.cpp target for FUZZ_SECONDS seconds (default 60). Exits non-zero if any target
# crashes; crashing inputs are kept under build-fuzz/artifacts/<target>/.
#   FUZZ_SECONDS=600 scripts/run-fuzzers.sh          # longer runs
#   scripts/run-fuzzers.sh fuzz_gguf                 # only the named targets
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${FUZZ_SECONDS:-60}

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

failed=()
for target in "${targets[@]}"; do
  name=${target#fuzz_}
  corpus=$build/corpus/$name
  artifacts=$build/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  if [ -x "$build/tests/fuzz/make_${name}_corpus" ]; then "$build/tests/fuzz/make_${name}_corpus" "$corpus"; fi
  options=(-max_total_time="$seconds" -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/")
  [ -f "$root/tests/fuzz/$target.dict" ] && options+=(-dict="$root/tests/fuzz/$target.dict")
  echo "== $target: ${seconds}s, corpus $corpus" >&2
  if ! "$build/tests/fuzz/$target" "${options[@]}" "$corpus"; then
    failed+=("$target")
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzers that found crashes: ${failed[*]} (inputs in $build/artifacts/)" >&2
  exit 1
fi
echo "all fuzzers ran ${seconds}s without crashes: ${targets[*]}" >&2
