// Scalar reference dot products: the plain reading of what the SIMD kernels compute, used by the
// tests and by Highway's single-lane fallback target.
#pragma once

#include <cstdint>

#include "backend/cpu/accumulation.h"
#include "model/ggml_type.h"

namespace channel::cpu {

// A Q4_0 or Q8_0 weight row of n_blocks blocks times Q8_0 activations: per block the exact
// integer dot product, scaled by d_w * d_x and accumulated in f32 in `order`.
float dot_quant_reference(GgmlType weight_type, const uint8_t* weight_row, const BlockQ8_0* x, int64_t n_blocks,
                          QuantAccumulation order);

// An F32, F16 or BF16 weight row of n values times activations already rounded to the weight's
// activation type: products of the f32-decoded values summed in f32, in index order.
float dot_float_reference(GgmlType weight_type, const uint8_t* weight_row, const float* x, int64_t n);

// A BF16 weight row of n values times bf16-rounded activations, in one of the VDPBF16PS pair
// orders of accumulation.h (kPairsTiled needs n to be a multiple of 32).
float dot_bf16_pairs_reference(const uint8_t* weight_row, const float* x, int64_t n, Bf16Accumulation order);

}  // namespace channel::cpu
