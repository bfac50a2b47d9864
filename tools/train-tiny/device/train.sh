#!/usr/bin/env bash
# The real training run, as one command on the device machine (run from the repository root):
#
#   OUT=/some/dir tools/train-tiny/device/train.sh [MINUTES] [train.py options...]
#
# Generates the corpus on the machine's CPUs, trains on CUDA when there is a GPU (else the CPU)
# for MINUTES of wall-clock time (default 7), and writes to $OUT: weights.json, weights.bin.NNN
# (fp16, at most 15 MiB each), loss.tsv, train.log. Needs python3 with torch and numpy; no
# network, nothing to install, nothing built (the vocabulary is committed: vocab.json).
set -euo pipefail
minutes="${1:-7}"
shift || true
: "${OUT:?set OUT to the directory the outputs go to}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$OUT"
{
  date -u
  nvidia-smi --query-gpu=name,memory.total --format=csv 2>/dev/null || echo "no GPU"
} > "$OUT/train.log"
exec python3 "$here/train.py" --vocab "$here/vocab.json" --out "$OUT" --minutes "$minutes" "$@"
