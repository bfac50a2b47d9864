#include "backend/cpu/ops.h"

#include <array>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "core/half.h"

namespace channel::cpu {

void rms_norm(const float* x, float* y, int64_t n, float eps, std::span<const float> weight) {
  // ggml sums the f32 squares in double, then takes the mean and the scale in f32.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (weight.empty()) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * weight[i];
  }
}

namespace {

float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCoefA * x * x)));
}

// GELU of every f16 input, rounded to f16: the table llama.cpp's CPU backend evaluates through.
const std::array<uint16_t, 65536>& gelu_f16_table() {
  static const auto table = [] {
    auto t = std::make_unique<std::array<uint16_t, 65536>>();
    for (uint32_t h = 0; h < 65536; ++h) (*t)[h] = f32_to_f16(gelu_tanh(f16_to_f32(static_cast<uint16_t>(h))));
    return t;
  }();
  return *table;
}

}  // namespace

void geglu(const float* gate, const float* up, float* y, int64_t n) {
  const auto& table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    float activated;
    if (g <= -10.0f) {
      activated = 0.0f;
    } else if (g >= 10.0f) {
      activated = g;
    } else {
      activated = f16_to_f32(table[f32_to_f16(g)]);
    }
    y[i] = activated * up[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

}  // namespace channel::cpu
