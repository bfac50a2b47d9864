#include "backend/cpu/activations.h"

#include "backend/cpu/activation_quant.h"
#include "core/half.h"

namespace channel::cpu {

PreparedActivations::PreparedActivations(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols,
                                         ThreadPool* pool)
    : n_tokens_(n_tokens), cols_(cols) {
  const size_t n = static_cast<size_t>(n_tokens * cols);
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      q8_blocks_.resize(n / kQuantBlock);
      wide_blocks_.resize(n / kQuantBlock);
      q8_scales_.resize(n / kQuantBlock);
      q8_sums_.resize(n / kQuantBlock);
      break;
    case GgmlType::F16:
    case GgmlType::BF16:
      rounded_.resize(n);
      values_ = rounded_.data();
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
      for (int64_t t = begin; t < end; ++t) quantize_row_q8_0(x + t * cols_, cols_, q8_blocks_.data() + t * blocks_per_token());
      for (size_t b = first / kQuantBlock; b < last / kQuantBlock; ++b) {
        int32_t sum = 0;
        for (int64_t i = 0; i < kQuantBlock / 2; ++i) {
          wide_blocks_[b].even[i] = q8_blocks_[b].qs[2 * i];
          wide_blocks_[b].odd[i] = q8_blocks_[b].qs[2 * i + 1];
          sum += wide_blocks_[b].even[i] + wide_blocks_[b].odd[i];
        }
        q8_sums_[b] = sum;
        q8_scales_[b] = f16_to_f32(q8_blocks_[b].d);
      }
      return;
    case GgmlType::F16:
      for (size_t i = first; i < last; ++i) rounded_[i] = f16_to_f32(f32_to_f16(x[i]));
      return;
    case GgmlType::BF16:
      for (size_t i = first; i < last; ++i) rounded_[i] = bf16_to_f32(f32_to_bf16(x[i]));
      return;
    case GgmlType::F32:
      return;
  }
}

}  // namespace channel::cpu
