// Gemma's gated FFN activation on the CPU: y[i] = gelu_tanh(gate[i]) * up[i], GELU evaluated
// through an f16 table as llama.cpp's CPU backend does (the gate rounded to f16, the table's f16
// result widened; outside [-10, 10] GELU is 0 or the gate itself).
#pragma once

#include <cstdint>

namespace channel::cpu {

// SIMD (Highway, dispatched at run time): the f16 conversions run on vectors (F16C on x86, round
// to nearest even) and only the table look-ups are per value; a prefill's GEGLU took ~11% of its
// time with both conversions done value by value in software. Targets without hardware f16
// conversion (x86 before AVX2) run geglu_reference. Bit-identical to geglu_reference.
void geglu(const float* gate, const float* up, float* y, int64_t n);

// The same arithmetic one value at a time, for the tests and for the tail of each call.
void geglu_reference(const float* gate, const float* up, float* y, int64_t n);

}  // namespace channel::cpu
