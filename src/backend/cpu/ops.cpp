#include "backend/cpu/ops.h"

#include <cmath>

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

void per_layer_input(float* projected, const float* token_row, float* y, int64_t n, float eps,
                     std::span<const float> norm, const PerLayerInputScales& scales) {
  for (int64_t i = 0; i < n; ++i) projected[i] *= scales.projection;
  rms_norm(projected, projected, n, eps, norm);
  for (int64_t i = 0; i < n; ++i) y[i] = (projected[i] + token_row[i] * scales.token) * scales.input;
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

}  // namespace channel::cpu
