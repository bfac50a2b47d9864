// Random GGUF weight matrices and activations for the matrix-kernel tests (CPU and GPU): wide but
// finite magnitudes of both signs and never zero, so that every block and every value contributes
// to a row's sum and a kernel that skips or misplaces one changes the result.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::testing {

// Finite fp16 of magnitude 2^-5 .. 2^6, either sign.
inline uint16_t random_f16(std::mt19937& rng) {
  const uint16_t sign = static_cast<uint16_t>(rng() & 1u) << 15;
  const uint16_t exponent = static_cast<uint16_t>(10 + rng() % 11);
  return static_cast<uint16_t>(sign | exponent << 10 | (rng() & 0x3ffu));
}

// Normal values scaled by 2^-4 .. 2^4; never zero.
inline float random_value(std::mt19937& rng) {
  std::normal_distribution<float> normal;
  float v = 0.0f;
  while (v == 0.0f) v = normal(rng) * std::exp2(static_cast<float>(static_cast<int>(rng() % 9) - 4));
  return v;
}

// A weight matrix and the bytes behind it.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;  // w.data points into bytes
};

inline TestMatrix random_matrix(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
  TestMatrix m;
  m.w = WeightMatrix{type, nullptr, cols, rows, ggml_row_bytes(type, cols)};
  m.bytes.resize(rows * m.w.row_bytes);
  const size_t block_bytes = ggml_type_traits(type).block_bytes;
  for (size_t offset = 0; offset < m.bytes.size(); offset += block_bytes) {
    uint8_t* p = &m.bytes[offset];
    switch (type) {
      case GgmlType::Q4_0:
      case GgmlType::Q8_0: {
        const uint16_t scale = random_f16(rng);
        std::memcpy(p, &scale, sizeof(scale));
        for (size_t i = sizeof(scale); i < block_bytes; ++i) p[i] = static_cast<uint8_t>(rng());  // any nibbles / int8
        break;
      }
      case GgmlType::F16: {
        const uint16_t value = random_f16(rng);
        std::memcpy(p, &value, sizeof(value));
        break;
      }
      case GgmlType::BF16: {
        const uint16_t value = f32_to_bf16(random_value(rng));
        std::memcpy(p, &value, sizeof(value));
        break;
      }
      case GgmlType::F32: {
        const float value = random_value(rng);
        std::memcpy(p, &value, sizeof(value));
        break;
      }
    }
  }
  m.w.data = m.bytes.data();
  return m;
}

inline std::vector<float> random_activations(int64_t n, std::mt19937& rng) {
  std::vector<float> x(n);
  for (float& v : x) v = random_value(rng);
  return x;
}

}  // namespace channel::testing
