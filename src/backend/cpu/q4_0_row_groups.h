// Q4_0 matrices repacked for the CPU kernels: rows interleaved in groups of 16, block by block,
// so that one 64-byte load holds four consecutive weights of each of a group's rows and a kernel
// keeps one output row per 32-bit lane, with no horizontal sums (llama.cpp's CPU backend repacks
// Q4_0 for the same reason, 8 rows at a time). A decode step reads each weight once, so the
// kernels' cost per byte decides its speed (the VNNI kernel alone streamed ~25 GB/s of the 28
// GB/s two threads read on the 2-core build machine). The repacked copy has the GGUF encoding's
// size; it is made once when the backend starts, and the kernels' integer sums and f32 steps are
// those of the GGUF layout's kernels, so results do not change.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::cpu {

inline constexpr int64_t kRowGroupRows = 16;
inline constexpr int64_t kRowGroupUnits = 4;  // 64-byte units of quants per block

// Block b of a row group: the rows' fp16 scales, then the quants in four units. Unit j holds
// bytes 4j..4j+3 of every row's Q4_0 block (row r at 4r): their low nibbles are elements
// 4j..4j+3 and their high nibbles elements 16+4j..16+4j+3, each stored + 8 as in Q4_0.
struct Q4_0RowGroupBlock {
  uint16_t d[kRowGroupRows];
  uint8_t qs[kRowGroupUnits][4 * kRowGroupRows];
};
static_assert(sizeof(Q4_0RowGroupBlock) == kRowGroupRows * sizeof(BlockQ4_0), "repacking keeps the size");

// Q4_0 matrices in the GGUF layout whose rows split into whole groups.
bool repackable_to_q4_0_row_groups(const WeightMatrix& w);

// The blocks of the row group holding row `row` (n_blocks = cols / 32 of them).
inline const Q4_0RowGroupBlock* q4_0_row_group(const WeightMatrix& w, int64_t row) {
  return reinterpret_cast<const Q4_0RowGroupBlock*>(w.data) + (row / kRowGroupRows) * (w.cols / kQuantBlock);
}

// Writes `w` (repackable_to_q4_0_row_groups) repacked into `out`, which holds as many bytes as
// `w` (repacking keeps the size), its groups shared out over `pool`; returns the view of `out`
// (layout kQ4_0RowGroups).
WeightMatrix repack_to_q4_0_row_groups(const WeightMatrix& w, uint8_t* out, ThreadPool& pool);

// The plain reading of a row-group row's dot product with Q8_0 activations: per block the exact
// integer sum, scaled by d_w * d_x and accumulated in f32 block after block (the
// kBlockSequential order). For Highway's single-lane target and the tests.
float dot_q4_0_row_group_reference(const WeightMatrix& w, int64_t row, const BlockQ8_0* x);

}  // namespace channel::cpu
