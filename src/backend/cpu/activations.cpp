#include "backend/cpu/activations.h"

#include "backend/cpu/activation_quant.h"
#include "core/half.h"

namespace channel::cpu {

PreparedActivations::PreparedActivations(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols)
    : n_tokens_(n_tokens), cols_(cols) {
  const size_t n = static_cast<size_t>(n_tokens * cols);
  switch (weight_type) {
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: {
      q8_blocks_.resize(n / kQuantBlock);
      wide_blocks_.resize(n / kQuantBlock);
      q8_scales_.resize(n / kQuantBlock);
      for (int64_t t = 0; t < n_tokens; ++t) {
        quantize_row_q8_0(x + t * cols, cols, q8_blocks_.data() + t * blocks_per_token());
      }
      for (size_t b = 0; b < q8_blocks_.size(); ++b) {
        for (int64_t i = 0; i < kQuantBlock / 2; ++i) {
          wide_blocks_[b].even[i] = q8_blocks_[b].qs[2 * i];
          wide_blocks_[b].odd[i] = q8_blocks_[b].qs[2 * i + 1];
        }
        q8_scales_[b] = f16_to_f32(q8_blocks_[b].d);
      }
      return;
    }
    case GgmlType::F16:
      rounded_.resize(n);
      for (size_t i = 0; i < n; ++i) rounded_[i] = f16_to_f32(f32_to_f16(x[i]));
      values_ = rounded_.data();
      return;
    case GgmlType::BF16:
      rounded_.resize(n);
      for (size_t i = 0; i < n; ++i) rounded_[i] = bf16_to_f32(f32_to_bf16(x[i]));
      values_ = rounded_.data();
      return;
    case GgmlType::F32:
      values_ = x;
      return;
  }
}

}  // namespace channel::cpu
