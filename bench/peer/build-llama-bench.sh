#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench against the PREBUILT llama.cpp libraries of the npm peer
# (scripts/install-peer.sh) and lays out one directory per CPU-variant choice, for
# bench/compare-llamacpp. Cached under the peer directory; rebuilt only when missing or when its
# inputs (sources, libraries, compiler, flags) change.
#
#   bench/peer/build-llama-bench.sh PEER_DIR [VARIANT]
#
# Prints the directory to run llama-bench from (its binary is DIR/llama-bench) on stdout;
# progress goes to stderr. VARIANT is `auto` (default: every libggml-cpu-*.so of the peer is
# visible and llama.cpp loads the one whose ggml_backend_score() is highest on this CPU, as it
# does for its own users) or the NAME of one libggml-cpu-NAME.so (zen4, icelake,
# sapphirerapids, haswell, ...): only that one is visible, to pin llama.cpp to it.
#
# Why this works: tools/llama-bench/{llama-bench,main}.cpp need only llama.h, ggml headers and
# the small part of common/ (argument helpers, CPU-mask parsing, build info) that the peer ships
# prebuilt as libllama-common.so, so the two files compile in seconds against the bundled
# headers and link against libllama-common, libllama, libggml and libggml-base as shipped.
# llama-bench calls ggml_backend_load_all(), which looks for libggml-<backend>-*.so in the
# directory of the executable and in the current directory, scores each CPU variant and loads the
# best; so each layout directory holds a copy of the binary, symlinks to the common libraries
# and symlinks to the variants it exposes, and llama-bench must be run with that directory as
# its current directory (bench/compare-llamacpp does; GGML_BACKEND_PATH must be unset, or an
# extra backend is loaded). On start it logs "load_backend: loaded CPU backend from
# .../libggml-cpu-NAME.so" on stderr, which names the variant that ran.
set -euo pipefail

log() { echo "build-llama-bench: $*" >&2; }
die() { log "error: $*"; exit 1; }

[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 PEER_DIR [auto|VARIANT]"
PEER_DIR=$(cd "$1" && pwd) || die "no peer directory $1 (run scripts/install-peer.sh)"
VARIANT=${2:-auto}
SRC=$PEER_DIR/src

libllama=$(compgen -G "$PEER_DIR/node_modules/@node-llama-cpp/linux-x64/bins/*/libllama.v*.so" | head -n 1) ||
  die "no prebuilt libllama under $PEER_DIR/node_modules/@node-llama-cpp/linux-x64/bins/ (run scripts/install-peer.sh)"
LIBDIR=$(dirname "$libllama")
[ -f "$SRC/tools/llama-bench/llama-bench.cpp" ] || die "no llama.cpp source in $SRC (run scripts/install-peer.sh)"
[ -f "$LIBDIR/libllama-common.so" ] || die "$LIBDIR has no libllama-common.so, which llama-bench needs"

# The libraries every layout links or loads: all but the CPU variants (and the Node.js addon).
common_libs=()
for lib in "$LIBDIR"/lib*.so; do
  case $(basename "$lib") in libggml-cpu-*) ;; *) common_libs+=("$lib") ;; esac
done
variants=()
for lib in "$LIBDIR"/libggml-cpu-*.so; do
  name=$(basename "$lib" .so)
  variants+=("${name#libggml-cpu-}")
done
[ ${#variants[@]} -gt 0 ] || die "no libggml-cpu-*.so in $LIBDIR"
if [ "$VARIANT" != auto ] && [ ! -f "$LIBDIR/libggml-cpu-$VARIANT.so" ]; then
  die "no CPU variant '$VARIANT' in the peer; variants: ${variants[*]}"
fi

CXX=${CXX:-g++}
command -v "$CXX" >/dev/null 2>&1 || die "no C++ compiler '$CXX' (set CXX)"
flags=(-std=c++17 -O2 -DNDEBUG -pthread)
includes=(-I "$SRC/common" -I "$SRC/include" -I "$SRC/ggml/include")
link_libs=("$LIBDIR/libllama-common.so" "$libllama" "$LIBDIR"/libggml.v*.so "$LIBDIR/libggml-base.so")
sources=("$SRC/tools/llama-bench/llama-bench.cpp" "$SRC/tools/llama-bench/main.cpp")

OUT=$PEER_DIR/llama-bench
# The build key: what the binary depends on. A different key rebuilds it and every layout.
key=$({
  echo "flags: ${flags[*]}"
  "$CXX" --version | head -n 1
  sha256sum "${sources[@]}" "${link_libs[@]}" "$SRC/include/llama.h" "$SRC/ggml/include/ggml.h"
} | sha256sum | cut -c1-16)

mkdir -p "$OUT"
if [ ! -x "$OUT/bin/llama-bench" ] || [ "$(cat "$OUT/bin/key" 2>/dev/null)" != "$key" ]; then
  log "compiling llama.cpp's llama-bench ($(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo source)) against the prebuilt libraries in $LIBDIR"
  rm -rf "$OUT/bin.partial"
  mkdir -p "$OUT/bin.partial"
  "$CXX" "${flags[@]}" "${includes[@]}" -o "$OUT/bin.partial/llama-bench" "${sources[@]}" "${link_libs[@]}" \
    -Wl,-rpath,'$ORIGIN' >&2
  echo "$key" > "$OUT/bin.partial/key"
  rm -rf "$OUT/bin"
  mv "$OUT/bin.partial" "$OUT/bin"
fi

# One layout per variant choice; rebuilt when the binary's key changes.
dir=$OUT/$VARIANT
if [ ! -x "$dir/llama-bench" ] || [ "$(cat "$dir/key" 2>/dev/null)" != "$key" ]; then
  log "laying out $dir (CPU variants visible: $([ "$VARIANT" = auto ] && echo "all: ${variants[*]}" || echo "$VARIANT only"))"
  tmp=$(mktemp -d "$OUT/.layout.XXXXXX")
  chmod 755 "$tmp"
  cp "$OUT/bin/llama-bench" "$tmp/llama-bench"  # a copy: the search path is the real executable's directory
  for lib in "${common_libs[@]}"; do ln -s "$lib" "$tmp/"; done
  if [ "$VARIANT" = auto ]; then
    for v in "${variants[@]}"; do ln -s "$LIBDIR/libggml-cpu-$v.so" "$tmp/"; done
  else
    ln -s "$LIBDIR/libggml-cpu-$VARIANT.so" "$tmp/"
  fi
  echo "$key" > "$tmp/key"
  rm -rf "$dir"
  mv "$tmp" "$dir"
fi
echo "$dir"
