// dequantize_row of matmul.h: value = q * d in f32, as ggml's dequantize_row_q{4,8}_0.
#include <cstring>

#include "backend/cpu/matmul.h"
#include "backend/cpu/weight_values.h"
#include "core/error.h"

namespace channel::cpu {

void dequantize_row(const WeightMatrix& w, int64_t row, float* out) {
  if (row < 0 || row >= w.rows) fail("dequantize_row: row {} out of range [0, {})", row, w.rows);
  if (w.layout != WeightLayout::kGguf) fail("dequantize_row: the matrix is repacked");
  const uint8_t* data = w.data + row * w.row_bytes;
  switch (w.type) {
    case GgmlType::F32:
      std::memcpy(out, data, w.cols * sizeof(float));
      return;
    case GgmlType::F16:
    case GgmlType::BF16:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = decode_float_weight(w.type, data, i);
      return;
    case GgmlType::Q4_0:
    case GgmlType::Q8_0:
      for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
        const QuantBlockValues block = decode_quant_block(w.type, data, b);
        for (int64_t j = 0; j < kQuantBlock; ++j) out[b * kQuantBlock + j] = block.values[j] * block.scale;
      }
      return;
  }
  fail("dequantize_row: unsupported weight type {}", static_cast<uint32_t>(w.type));
}

}  // namespace channel::cpu
