#include "backend/cpu/dot_reference.h"

#include <cmath>

#include "backend/cpu/weight_values.h"
#include "core/half.h"

namespace channel::cpu {

float dot_quant_reference(GgmlType weight_type, const uint8_t* weight_row, const BlockQ8_0* x, int64_t n_blocks,
                          QuantAccumulation order) {
  // Both orders are accumulated; `order` picks the one returned.
  float lanes[8] = {};  // kEightLanes: lane j takes elements 4j..4j+3 of every block
  float sum = 0.0f;     // kBlockSequential
  for (int64_t b = 0; b < n_blocks; ++b) {
    const QuantBlockValues w = decode_quant_block(weight_type, weight_row, b);
    const float scale = w.scale * f16_to_f32(x[b].d);
    int32_t lane_sums[8] = {};
    for (int64_t i = 0; i < kQuantBlock; ++i) lane_sums[i / 4] += w.values[i] * x[b].qs[i];
    int32_t block_sum = 0;
    for (int j = 0; j < 8; ++j) {
      lanes[j] = std::fma(static_cast<float>(lane_sums[j]), scale, lanes[j]);
      block_sum += lane_sums[j];
    }
    sum = std::fma(static_cast<float>(block_sum), scale, sum);
  }
  return order == QuantAccumulation::kEightLanes ? sum_lanes_in_ggml_order(lanes) : sum;
}

float dot_float_reference(GgmlType weight_type, const uint8_t* weight_row, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum = std::fma(decode_float_weight(weight_type, weight_row, i), x[i], sum);
  return sum;
}

float dot_bf16_pairs_reference(const uint8_t* weight_row, const float* x, int64_t n, Bf16Accumulation order) {
  const bool tiled = order == Bf16Accumulation::kPairsTiled;
  const int64_t paired = tiled ? n : n / 64 * 64;
  float lanes[2][16] = {};
  for (int64_t c = 0; c < paired; c += 32) {
    float* set = lanes[tiled ? 0 : (c / 32) % 2];
    for (int64_t j = 0; j < 16; ++j) {
      const int64_t odd = c + 2 * j + 1, even = c + 2 * j;
      set[j] += decode_float_weight(GgmlType::BF16, weight_row, odd) * x[odd];  // exact product, one rounding
      set[j] += decode_float_weight(GgmlType::BF16, weight_row, even) * x[even];
    }
  }
  if (tiled) return sum_16_lanes_in_reduce_order(lanes[0]);
  double sum = sum_16_lanes_in_reduce_order(lanes[0]);
  sum += sum_16_lanes_in_reduce_order(lanes[1]);
  for (int64_t i = paired; i < n; ++i) sum += decode_float_weight(GgmlType::BF16, weight_row, i) * x[i];
  return static_cast<float>(sum);
}

}  // namespace channel::cpu
