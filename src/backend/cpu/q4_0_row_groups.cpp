#include "backend/cpu/q4_0_row_groups.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace channel::cpu {

bool repackable_to_q4_0_row_groups(const WeightMatrix& w) {
  return w.type == GgmlType::Q4_0 && w.layout == WeightLayout::kGguf && w.rows > 0 && w.rows % kRowGroupRows == 0 &&
         w.cols % kQuantBlock == 0;
}

WeightMatrix repack_to_q4_0_row_groups(const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  if (!repackable_to_q4_0_row_groups(w)) {
    fail("Q4_0 row groups: cannot repack a {} matrix of {} rows", ggml_type_traits(w.type).name, w.rows);
  }
  const int64_t n_blocks = w.cols / kQuantBlock;
  const int64_t n_groups = w.rows / kRowGroupRows;
  auto* blocks = reinterpret_cast<Q4_0RowGroupBlock*>(out);
  pool.parallel_for(n_groups, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      for (int64_t r = 0; r < kRowGroupRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ4_0*>(w.row(g * kRowGroupRows + r));
        for (int64_t b = 0; b < n_blocks; ++b) {
          Q4_0RowGroupBlock& block = blocks[g * n_blocks + b];
          block.d[r] = row[b].d;
          for (int64_t j = 0; j < kRowGroupUnits; ++j) std::memcpy(&block.qs[j][4 * r], &row[b].qs[4 * j], 4);
        }
      }
    }
  });
  WeightMatrix view = w;
  view.data = out;
  view.layout = WeightLayout::kQ4_0RowGroups;
  return view;
}

float dot_q4_0_row_group_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x) {
  const Q4_0RowGroupBlock* group = q4_0_row_group(w, row);
  const int64_t r = row % kRowGroupRows;
  float sum = 0.0f;
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const Q4_0RowGroupBlock& block = group[b];
    int32_t block_sum = 0;
    for (int64_t j = 0; j < kRowGroupUnits; ++j) {
      for (int64_t i = 0; i < 4; ++i) {
        const uint8_t byte = block.qs[j][4 * r + i];
        block_sum += ((byte & 0x0f) - 8) * x[b].qs[4 * j + i] + ((byte >> 4) - 8) * x[b].qs[16 + 4 * j + i];
      }
    }
    sum = std::fma(static_cast<float>(block_sum), f16_to_f32(block.d[r]) * f16_to_f32(x[b].d), sum);
  }
  return sum;
}

}  // namespace channel::cpu
