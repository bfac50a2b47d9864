#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/half.h"

namespace channel::cpu {
namespace {

float dot_f32_f16(const float* q, const uint16_t* k, size_t n) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += q[i] * f16_to_f32(k[i]);
  return sum;
}

float dot_f16_f16(const uint16_t* q, const uint16_t* k, size_t n) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += f16_to_f32(q[i]) * f16_to_f32(k[i]);
  return sum;
}

}  // namespace

void attend_f32(const AttentionInputs& in, float* out, std::span<float> scores) {
  const size_t head_dim = in.query.size();
  const size_t n = in.keys.size();
  std::fill(out, out + head_dim, 0.0f);
  if (n == 0) return;
  float max_score = -std::numeric_limits<float>::infinity();
  for (size_t j = 0; j < n; ++j) {
    scores[j] = dot_f32_f16(in.query.data(), in.keys[j], head_dim);
    max_score = std::max(max_score, scores[j]);
  }
  float sum = 0.0f;
  for (size_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  for (size_t j = 0; j < n; ++j) {
    const float p = scores[j];
    const uint16_t* v = in.values[j];
    for (size_t i = 0; i < head_dim; ++i) out[i] = std::fma(f16_to_f32(v[i]), p, out[i]);
  }
  const float inv_sum = 1.0f / sum;
  for (size_t i = 0; i < head_dim; ++i) out[i] *= inv_sum;
}

void attend_f16_accumulate(const AttentionInputs& in, float* out, std::span<uint16_t> scratch) {
  const size_t head_dim = in.query.size();
  uint16_t* query = scratch.data();
  uint16_t* accumulator = scratch.data() + head_dim;
  for (size_t i = 0; i < head_dim; ++i) {
    query[i] = f32_to_f16(in.query[i]);
    accumulator[i] = 0;
  }
  float max_score = -std::numeric_limits<float>::infinity();
  float sum = 0.0f;
  for (size_t j = 0; j < in.keys.size(); ++j) {
    const float s = dot_f16_f16(query, in.keys[j], head_dim);
    float rescale = 1.0f;  // applied to what was accumulated when a new maximum appears
    float weight = 1.0f;   // exp(s - max) of this key
    if (s > max_score) {
      rescale = std::exp(max_score - s);
      max_score = s;
      for (size_t i = 0; i < head_dim; ++i) accumulator[i] = f32_to_f16(f16_to_f32(accumulator[i]) * rescale);
    } else {
      weight = std::exp(s - max_score);
    }
    const uint16_t* v = in.values[j];
    for (size_t i = 0; i < head_dim; ++i) {
      accumulator[i] = f32_to_f16(std::fma(f16_to_f32(v[i]), weight, f16_to_f32(accumulator[i])));
    }
    sum = sum * rescale + weight;
  }
  const float inv_sum = sum == 0.0f ? 0.0f : 1.0f / sum;
  for (size_t i = 0; i < head_dim; ++i) out[i] = f16_to_f32(accumulator[i]) * inv_sum;
}

}  // namespace channel::cpu
