#include "backend/cpu/activations.h"

#include "backend/cpu/activation_quant.h"
#include "core/half.h"

namespace channel::cpu {

PreparedActivations::PreparedActivations(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols,
                                         ThreadPool* pool, ActivationBuffers* buffers)
    : b_(buffers ? *buffers : own_) {
  prepare(weight_type, x, n_tokens, cols, pool);
}

void PreparedActivations::prepare(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols,
                                  ThreadPool* pool) {
  n_tokens_ = n_tokens;
  cols_ = cols;
  values_ = nullptr;
  const size_t n = static_cast<size_t>(n_tokens * cols);
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      b_.q8_blocks.resize(n / kQuantBlock);
      b_.wide_blocks.resize(n / kQuantBlock);
      b_.q8_scales.resize(n / kQuantBlock);
      b_.q8_sums.resize(n / kQuantBlock);
      if (weight_type == GgmlType::Q8_0) b_.q8_unit_offsets.resize(n / kQuantBlock * kQ8UnitOffsets);
      break;
    case GgmlType::F16:
    case GgmlType::BF16:
      b_.rounded.resize(n);
      values_ = b_.rounded.data();
      break;
    case GgmlType::F32:
      values_ = x;
      return;
  }
  const auto convert = [&](int64_t begin, int64_t end) { convert_tokens(weight_type, x, begin, end); };
  if (pool) {
    pool->parallel_for(n_tokens, convert);
  } else {
    convert(0, n_tokens);
  }
}

void PreparedActivations::convert_tokens(GgmlType weight_type, const float* x, int64_t begin, int64_t end) {
  const size_t first = static_cast<size_t>(begin * cols_), last = static_cast<size_t>(end * cols_);
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      for (int64_t t = begin; t < end; ++t) {
        quantize_row_q8_0(x + t * cols_, cols_, b_.q8_blocks.data() + t * blocks_per_token());
      }
      for (size_t b = first / kQuantBlock; b < last / kQuantBlock; ++b) {
        int32_t sum = 0;
        for (int64_t i = 0; i < kQuantBlock / 2; ++i) {
          b_.wide_blocks[b].even[i] = b_.q8_blocks[b].qs[2 * i];
          b_.wide_blocks[b].odd[i] = b_.q8_blocks[b].qs[2 * i + 1];
          sum += b_.wide_blocks[b].even[i] + b_.wide_blocks[b].odd[i];
        }
        b_.q8_sums[b] = sum;
        b_.q8_scales[b] = f16_to_f32(b_.q8_blocks[b].d);
        if (weight_type != GgmlType::Q8_0) continue;
        for (int64_t j = 0; j < kQ8UnitOffsets; ++j) {
          const int8_t* quants = b_.q8_blocks[b].qs + 4 * j;
          b_.q8_unit_offsets[b * kQ8UnitOffsets + j] = -128 * (quants[0] + quants[1] + quants[2] + quants[3]);
        }
      }
      return;
    case GgmlType::F16:
      for (size_t i = first; i < last; ++i) b_.rounded[i] = f16_to_f32(f32_to_f16(x[i]));
      return;
    case GgmlType::BF16:
      for (size_t i = first; i < last; ++i) b_.rounded[i] = bf16_to_f32(f32_to_bf16(x[i]));
      return;
    case GgmlType::F32:
      return;
  }
}

}  // namespace channel::cpu
