#!/usr/bin/env bash
# Installs the llama.cpp peer that the parity tests compare Channel against, from the npm registry:
#   - node-llama-cpp ships the full llama.cpp source as a git bundle (headers, gguf-py, vocab GGUFs);
#   - @node-llama-cpp/linux-x64 ships prebuilt CPU libraries of that same source (libllama, libggml,
#     one libggml-cpu-<uarch>.so per x86 microarchitecture, picked at run time).
# Nothing is compiled: tests/parity/CMakeLists.txt links the prebuilt libraries with the bundled headers.
#
# Usage: scripts/install-peer.sh [DIR]
#   DIR defaults to $CHANNEL_PEER_DIR, else ~/.cache/channel-peer (the default of the CMake cache
#   variable CHANNEL_PEER_DIR). Safe to re-run: parts already installed at the pinned version are kept.
# Progress goes to stderr; stdout gets shell assignments saying where the parts are.
set -euo pipefail

# The bundled source must be the one the prebuilt libraries were built from (their headers must
# agree on struct layouts), so both packages are pinned to the same version.
readonly VERSION=3.21.1
DIR=${1:-${CHANNEL_PEER_DIR:-$HOME/.cache/channel-peer}}

log() { echo "install-peer: $*" >&2; }
die() { log "error: $*"; exit 1; }

for tool in npm node git; do
  command -v "$tool" >/dev/null 2>&1 ||
    die "'$tool' not found; install Node.js, npm and git (scripts/install-deps.sh does)"
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
cd "$DIR"

installed_version() {  # prints the installed version of npm package $1, or nothing
  node -e 'try { console.log(require(process.argv[1] + "/package.json").version) } catch {}' \
    "$DIR/node_modules/$1"
}

if [ "$(installed_version node-llama-cpp)" = "$VERSION" ] &&
   [ "$(installed_version @node-llama-cpp/linux-x64)" = "$VERSION" ]; then
  log "node-llama-cpp@$VERSION already installed in $DIR"
else
  log "installing node-llama-cpp@$VERSION and @node-llama-cpp/linux-x64@$VERSION into $DIR (about 50 MB download)"
  [ -f package.json ] || echo '{"name":"channel-peer","private":true}' > package.json
  # --omit=optional: node-llama-cpp lists every platform's binaries (CUDA, Vulkan, arm, ~650 MB)
  # as optional dependencies; the one platform package we need is named explicitly instead.
  # --ignore-scripts: only the files are used; node-llama-cpp's postinstall (which npm < 11 runs)
  # loads its Node.js bindings, probing GPUs and building llama.cpp from source if that fails.
  npm install --no-audit --no-fund --omit=optional --ignore-scripts -E \
    "node-llama-cpp@$VERSION" "@node-llama-cpp/linux-x64@$VERSION" >&2
fi

libllama=$(compgen -G "node_modules/@node-llama-cpp/linux-x64/bins/*/libllama.v*.so" | head -n 1) ||
  die "no libllama.v*.so under node_modules/@node-llama-cpp/linux-x64/bins/ (is this an x86-64 Linux machine?)"
LIBDIR=$DIR/$(dirname "$libllama")

bundle=node_modules/node-llama-cpp/llama/gitRelease.bundle
[ -f "$bundle" ] || die "$bundle is missing from node-llama-cpp@$VERSION"
bundle_head=$(git bundle list-heads "$bundle" | awk '$2 == "HEAD" { print $1 }')
if [ -d src/.git ] && [ "$(git -C src rev-parse HEAD)" = "$bundle_head" ]; then
  log "llama.cpp source ${bundle_head:0:7} already in $DIR/src"
else
  # An older peer's clone is replaced; anything else named src is not ours to delete.
  if [ -e src ] && ! { [ -d src/.git ] && [ -f src/include/llama.h ]; }; then
    die "$DIR/src exists but is not a llama.cpp clone; move it away or choose another DIR"
  fi
  log "cloning llama.cpp source ${bundle_head:0:7} from the bundle into $DIR/src"
  # Clone beside and rename, so an interrupted clone never looks like a finished one.
  rm -rf src.partial
  git -c advice.detachedHead=false clone -q "$bundle" src.partial >&2
  rm -rf src
  mv src.partial src
fi

cat <<EOF
PEER_DIR=$DIR
PEER_LIBDIR=$LIBDIR
PEER_SRC=$DIR/src
PEER_INCLUDE="$DIR/src/include $DIR/src/ggml/include"
PEER_VOCAB_GEMMA4=$DIR/src/models/ggml-vocab-gemma-4.gguf
PEER_GGUF_PY=$DIR/src/gguf-py
EOF
log "done; configure Channel with -DCHANNEL_PEER_DIR=$DIR (the default when DIR is ~/.cache/channel-peer)"
