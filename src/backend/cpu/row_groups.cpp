#include "backend/cpu/row_groups.h"

#include <cmath>
#include <cstring>

#include "backend/cpu/accumulation.h"
#include "core/error.h"
#include "core/half.h"

namespace channel::cpu {
namespace {

// Row group g of `w` into `out`: block b's scales and units from each row's block b (GGUF's
// Q4_0 and Q8_0 blocks alike: an fp16 scale, then the quants, 4 bytes per unit).
template <class GgufBlock, class GroupBlock>
void repack_group(const WeightMatrix& w, int64_t g, GroupBlock* out) {
  const int64_t n_blocks = w.cols / kQuantBlock;
  for (int64_t r = 0; r < kRowGroupRows; ++r) {
    const auto* row = reinterpret_cast<const GgufBlock*>(w.row(g * kRowGroupRows + r));
    for (int64_t b = 0; b < n_blocks; ++b) {
      GroupBlock& block = out[g * n_blocks + b];
      block.d[r] = row[b].d;
      for (int64_t j = 0; j < GroupBlock::kUnits; ++j) std::memcpy(&block.qs[j][4 * r], &row[b].qs[4 * j], 4);
    }
  }
}

float dot_q4_0_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x) {
  const auto* group = row_group<Q4_0RowGroupBlock>(w, row);
  const int64_t r = row % kRowGroupRows;
  float sum = 0.0f;
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const Q4_0RowGroupBlock& block = group[b];
    int32_t block_sum = 0;
    for (int64_t j = 0; j < Q4_0RowGroupBlock::kUnits; ++j) {
      for (int64_t i = 0; i < 4; ++i) {
        const uint8_t byte = block.qs[j][4 * r + i];
        block_sum += ((byte & 0x0f) - 8) * x[b].qs[4 * j + i] + ((byte >> 4) - 8) * x[b].qs[16 + 4 * j + i];
      }
    }
    sum = std::fma(static_cast<float>(block_sum), f16_to_f32(block.d[r]) * f16_to_f32(x[b].d), sum);
  }
  return sum;
}

float dot_q8_0_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x) {
  const auto* group = row_group<Q8_0RowGroupBlock>(w, row);
  const int64_t r = row % kRowGroupRows;
  float lanes[Q8_0RowGroupBlock::kUnits] = {};
  for (int64_t b = 0; b < w.cols / kQuantBlock; ++b) {
    const Q8_0RowGroupBlock& block = group[b];
    const float d = f16_to_f32(block.d[r]) * f16_to_f32(x[b].d);
    for (int64_t j = 0; j < Q8_0RowGroupBlock::kUnits; ++j) {
      int32_t unit_sum = 0;
      for (int64_t i = 0; i < 4; ++i) unit_sum += block.qs[j][4 * r + i] * x[b].qs[4 * j + i];
      lanes[j] = std::fma(d, static_cast<float>(unit_sum), lanes[j]);
    }
  }
  return sum_lanes_in_ggml_order(lanes);
}

}  // namespace

bool repackable_to_row_groups(const WeightMatrix& w) {
  return (w.type == GgmlType::Q4_0 || w.type == GgmlType::Q8_0) && w.layout == WeightLayout::kGguf && w.rows > 0 &&
         w.rows % kRowGroupRows == 0 && w.cols % kQuantBlock == 0;
}

WeightMatrix repack_to_row_groups(const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  if (!repackable_to_row_groups(w)) {
    fail("row groups: cannot repack a {} matrix of {} rows", ggml_type_traits(w.type).name, w.rows);
  }
  pool.parallel_for(w.rows / kRowGroupRows, [&](int64_t begin, int64_t end) {
    for (int64_t g = begin; g < end; ++g) {
      if (w.type == GgmlType::Q4_0) {
        repack_group<BlockQ4_0>(w, g, reinterpret_cast<Q4_0RowGroupBlock*>(out));
      } else {
        repack_group<BlockQ8_0>(w, g, reinterpret_cast<Q8_0RowGroupBlock*>(out));
      }
    }
  });
  WeightMatrix view = w;
  view.data = out;
  view.layout = WeightLayout::kRowGroups;
  return view;
}

float dot_row_group_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x) {
  return w.type == GgmlType::Q4_0 ? dot_q4_0_reference(w, row, x) : dot_q8_0_reference(w, row, x);
}

}  // namespace channel::cpu
