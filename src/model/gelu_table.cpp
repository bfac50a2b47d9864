#include "model/gelu_table.h"

#include <cmath>
#include <memory>

#include "core/half.h"

namespace channel {
namespace {

float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

}  // namespace

const std::array<uint16_t, 65536>& gelu_f16_table() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<uint16_t, 65536>>();
    for (uint32_t h = 0; h < 65536; ++h) (*t)[h] = f32_to_f16(gelu_tanh(f16_to_f32(static_cast<uint16_t>(h))));
    return t;
  }();
  return *table;
}

}  // namespace channel
