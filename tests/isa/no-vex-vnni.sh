#!/usr/bin/env bash
# Fails if a binary holds a VEX-encoded VNNI instruction ({vex} vpdpbusd, vpdpwssd, ...), the
# AVX-VNNI form that Alder Lake and Sapphire Rapids have but CPUs with only AVX512-VNNI lack (Ice
# Lake; Zen 4 and Zen 5 guests whose hypervisor hides AVX-VNNI). Highway runs its AVX3_DL target on
# those CPUs, yet its target string names AVX-VNNI, so GCC picks the VEX form for a 256-bit VNNI
# intrinsic there: the CPU backend spells those instructions in their EVEX form
# (dot_kernels.cpp, DotBytesEvex), and this test keeps it that way.
# usage: no-vex-vnni.sh BINARY...
set -euo pipefail
status=0
for binary in "$@"; do
  found=$(objdump -d --no-show-raw-insn "$binary" |
    awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 } /\{vex\} *vpdp/ { print fn }' | sort -u | c++filt | cut -c1-160)
  if [ -n "$found" ]; then
    echo "$binary: VEX-encoded VNNI instructions (AVX-VNNI, not on every AVX3_DL CPU) in:" >&2
    echo "$found" >&2
    status=1
  else
    echo "$binary: no VEX-encoded VNNI instruction"
  fi
done
exit $status
