#include "model/rope.h"

#include <cmath>
#include <iterator>

#include "core/error.h"
#include "core/fused_multiply_add.h"

namespace channel {

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
    // Fused as ggml's CPU RoPE computes it, so rotated keys match the peer's bit for bit
    // (fused_multiply_add: no libm call per value, and no software fmaf on CPUs without FMA).
    head[i] = fused_multiply_add(x0, cos_[i], -(x1 * sin_[i]));
    head[i + half] = fused_multiply_add(x0, sin_[i], x1 * cos_[i]);
  }
}

void rope_rotation_by(int64_t delta, int n_rot, float base, float freq_scale, std::span<const float> freq_factors,
                      float* cos_out, float* sin_out) {
  for (int i = 0; i < n_rot / 2; ++i) {
    const double factor = freq_factors.empty() ? 1.0 : freq_factors[i];
    const double inverse_frequency = std::pow(static_cast<double>(base), -2.0 * i / n_rot) / factor;
    const double angle = std::fmod(static_cast<double>(delta) * freq_scale * inverse_frequency, 2.0 * M_PI);
    cos_out[i] = static_cast<float>(std::cos(angle));
    sin_out[i] = static_cast<float>(std::sin(angle));
  }
}

void rope_rotate_by(float* head, int64_t delta, int n_rot, float base, float freq_scale,
                    std::span<const float> freq_factors) {
  const int half = n_rot / 2;
  if (half > 4096) fail("RoPE dimension {} exceeds the supported 8192", n_rot);
  float c[4096], s[4096];
  rope_rotation_by(delta, n_rot, base, freq_scale, freq_factors, c, s);
  for (int i = 0; i < half; ++i) {
    const float x0 = head[i];
    const float x1 = head[i + half];
    head[i] = x0 * c[i] - x1 * s[i];
    head[i + half] = x0 * s[i] + x1 * c[i];
  }
}

}  // namespace channel
