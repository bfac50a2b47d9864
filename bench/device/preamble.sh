# Sourced first by the bench/device scripts ON the GPU machine, from the repository root: R (that
# root), OUT (the folder whose files come back; made here), CH (the carried channel binary) and
# VOCAB (the carried Gemma 4 vocabulary, for `channel model synth`).
R=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
CH=$R/.devrun/channel
VOCAB=$R/.peer/vocab-gemma4.gguf
# pack.sh's cpu mode carries the vocabulary gzipped.
[ -f "$VOCAB" ] || [ ! -f "$VOCAB.gz" ] || gunzip -k "$VOCAB.gz"
