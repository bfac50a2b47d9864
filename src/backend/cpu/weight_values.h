// Scalar decoding of weight rows: Q4_0 / Q8_0 blocks into their integer values and fp16 scale,
// F32 / F16 / BF16 elements into f32. The one definition of the layouts (ggml-common.h) that
// dequantization, the reference dot products and the kernels' scalar tails read.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/half.h"
#include "model/ggml_type.h"

namespace channel::cpu {

// The 32 integer values of a Q4_0 (nibble - 8) or Q8_0 block; value i stands for values[i] * scale.
struct QuantBlockValues {
  int8_t values[kQuantBlock];
  float scale;
};

inline QuantBlockValues decode_q4_0_block(const uint8_t* data) {
  BlockQ4_0 block;
  std::memcpy(&block, data, sizeof(block));
  QuantBlockValues out;
  for (int64_t j = 0; j < kQuantBlock / 2; ++j) {
    out.values[j] = static_cast<int8_t>((block.qs[j] & 0x0f) - 8);
    out.values[j + kQuantBlock / 2] = static_cast<int8_t>((block.qs[j] >> 4) - 8);
  }
  out.scale = f16_to_f32(block.d);
  return out;
}

inline QuantBlockValues decode_q8_0_block(const uint8_t* data) {
  BlockQ8_0 block;
  std::memcpy(&block, data, sizeof(block));
  QuantBlockValues out;
  std::memcpy(out.values, block.qs, sizeof(out.values));
  out.scale = f16_to_f32(block.d);
  return out;
}

// Block `b` of a Q4_0 or Q8_0 row.
inline QuantBlockValues decode_quant_block(GgmlType type, const uint8_t* row, int64_t b) {
  return type == GgmlType::Q4_0 ? decode_q4_0_block(row + b * sizeof(BlockQ4_0))
                                : decode_q8_0_block(row + b * sizeof(BlockQ8_0));
}

// Element i of an F32, F16 or BF16 row, exactly as f32.
inline float decode_float_weight(GgmlType type, const uint8_t* row, int64_t i) {
  if (type == GgmlType::F32) {
    float value;
    std::memcpy(&value, row + i * sizeof(float), sizeof(value));
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, row + i * sizeof(bits), sizeof(bits));
  return type == GgmlType::F16 ? f16_to_f32(bits) : bf16_to_f32(bits);
}

}  // namespace channel::cpu
