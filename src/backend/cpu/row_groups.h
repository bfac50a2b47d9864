// Q4_0 and Q8_0 matrices repacked for the CPU kernels: rows interleaved in groups of 16, block by
// block, so that one 64-byte load holds four consecutive weights of each of a group's rows and a
// kernel keeps one output row per 32-bit lane, with no horizontal sums (llama.cpp's CPU backend
// repacks Q4_0 for the same reason, 8 rows at a time). A decode step reads each weight once, so
// the kernels' cost per byte decides its speed (the Q4_0 VNNI kernel alone streamed ~25 GB/s of
// the 28 GB/s two threads read on 4 KiB pages on the 2-core build machine). The repacked copy
// has the GGUF encoding's size; it is made once when the backend starts, and the kernels'
// integer sums and f32 steps are those of the GGUF layout's kernels, so results do not change.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::cpu {

inline constexpr int64_t kRowGroupRows = 16;

// Block b of a Q4_0 row group: the rows' fp16 scales, then the quants in four units. Unit j holds
// bytes 4j..4j+3 of every row's Q4_0 block (row r at 4r): their low nibbles are elements
// 4j..4j+3 and their high nibbles elements 16+4j..16+4j+3, each stored + 8 as in Q4_0.
struct Q4_0RowGroupBlock {
  static constexpr int64_t kUnits = 4;  // 64-byte units of quants
  uint16_t d[kRowGroupRows];
  uint8_t qs[kUnits][4 * kRowGroupRows];
};
static_assert(sizeof(Q4_0RowGroupBlock) == kRowGroupRows * sizeof(BlockQ4_0), "repacking keeps the size");

// Block b of a Q8_0 row group: the rows' fp16 scales, then eight units; unit j holds elements
// 4j..4j+3 of every row's block (row r at 4r), signed as in Q8_0.
struct Q8_0RowGroupBlock {
  static constexpr int64_t kUnits = 8;
  uint16_t d[kRowGroupRows];
  int8_t qs[kUnits][4 * kRowGroupRows];
};
static_assert(sizeof(Q8_0RowGroupBlock) == kRowGroupRows * sizeof(BlockQ8_0), "repacking keeps the size");

// Q4_0 and Q8_0 matrices in the GGUF layout whose rows split into whole groups.
bool repackable_to_row_groups(const WeightMatrix& w);

// The blocks of the row group holding row `row` (cols / 32 of them), for w's type.
template <class Block>
const Block* row_group(const WeightMatrix& w, int64_t row) {
  return reinterpret_cast<const Block*>(w.data) + (row / kRowGroupRows) * (w.cols / kQuantBlock);
}

// Writes `w` (repackable_to_row_groups) repacked into `out`, which holds as many bytes as `w`
// (repacking keeps the size), its groups shared out over `pool`; returns the view of `out`
// (layout kRowGroups).
WeightMatrix repack_to_row_groups(const WeightMatrix& w, uint8_t* out, ThreadPool& pool);

// The plain reading of a row-group row's dot product with Q8_0 activations, in the f32 order of
// the GGUF layout's kernels for the type: Q4_0 per block the exact integer sum, scaled by
// d_w * d_x and accumulated block after block (kBlockSequential); Q8_0 in eight lanes, lane j
// accumulating the sums of elements 4j..4j+3 (kEightLanes). For Highway's single-lane target and
// the tests.
float dot_row_group_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x);

}  // namespace channel::cpu
