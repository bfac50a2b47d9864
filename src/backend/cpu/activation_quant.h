// f32 activations -> Q8_0 blocks, bit-exact with what llama.cpp's CPU backend executes on x86
// (quantize_row_q8_0 in ggml-cpu/arch/x86/quants.c, AVX/AVX2 path, which the AVX-512 builds run
// too, and ggml_quantize_mat_q8_0_4x8 of the Q4_0 repack path, which rounds the same way):
//   amax = max |x| over the block, d = amax / 127, id = amax != 0 ? 127 / amax : 0,
//   q = round-to-nearest-even(x * id), scale stored as fp16(d) (round to nearest even).
// Note the ties: ggml's scalar quantize_row_q8_0_ref uses roundf (ties away from zero), which is
// not what its x86 builds run.
#pragma once

#include <cstdint>

#include "model/ggml_type.h"

namespace channel::cpu {

// Quantizes n values (a multiple of kQuantBlock) to n / kQuantBlock blocks, using the best SIMD
// target of this CPU.
void quantize_row_q8_0(const float* x, int64_t n, BlockQ8_0* out);

// Plain scalar version of the same rounding, for tests. Assumes the default FP rounding mode.
void quantize_row_q8_0_reference(const float* x, int64_t n, BlockQ8_0* out);

}  // namespace channel::cpu
