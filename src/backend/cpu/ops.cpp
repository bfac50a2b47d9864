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

void RopeTable::compute(int32_t position, int n_rot, float base, float freq_scale, std::span<const float> freq_factors) {
  if (n_rot > 2 * static_cast<int>(std::size(cos_))) fail("RoPE dimension {} exceeds the supported 8192", n_rot);
  n_rot_ = n_rot;
  const float theta_scale = std::pow(base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(position);
  for (int i = 0; i < n_rot / 2; ++i) {
    const float factor = freq_factors.empty() ? 1.0f : freq_factors[i];
    const float angle = freq_scale * (theta / factor);
    cos_[i] = std::cos(angle);
    sin_[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

void RopeTable::apply(float* head) const {
  const int half = n_rot_ / 2;
  for (int i = 0; i < half; ++i) {
    const float x0 = head[i];
    const float x1 = head[i + half];
    // Fused as ggml's CPU RoPE computes it, so rotated keys match the peer's bit for bit.
    head[i] = std::fma(x0, cos_[i], -(x1 * sin_[i]));
    head[i + half] = std::fma(x0, sin_[i], x1 * cos_[i]);
  }
}

void rope_rotate_by(float* head, int64_t delta, int n_rot, float base, float freq_scale,
                    std::span<const float> freq_factors) {
  const int half = n_rot / 2;
  for (int i = 0; i < half; ++i) {
    const double factor = freq_factors.empty() ? 1.0 : freq_factors[i];
    const double inverse_frequency = std::pow(static_cast<double>(base), -2.0 * i / n_rot) / factor;
    const double angle = std::fmod(static_cast<double>(delta) * freq_scale * inverse_frequency, 2.0 * M_PI);
    const float c = static_cast<float>(std::cos(angle));
    const float s = static_cast<float>(std::sin(angle));
    const float x0 = head[i];
    const float x1 = head[i + half];
    head[i] = x0 * c - x1 * s;
    head[i + half] = x0 * s + x1 * c;
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
