// Conversion of f32 rows to the GGUF weight types, bit-exact with ggml's reference quantizers
// (quantize_row_q4_0_ref, quantize_row_q8_0_ref, ggml_fp32_to_fp16/bf16). Used by the model
// synthesizer, by tests and (dequantize) by the Vulkan backend's per-layer embedding rows; the
// hot-path activation quantizer lives with the CPU kernels.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/ggml_type.h"

namespace channel {

// Encodes `values` (length a multiple of the type's block size) as `type`.
std::vector<uint8_t> quantize_row(GgmlType type, std::span<const float> values);

// Decodes `n` values of `type` from `data`.
void dequantize(GgmlType type, const uint8_t* data, int64_t n, float* out);

}  // namespace channel
