// SIMD dot products of weight rows with prepared activations (Highway, dispatched at run time to
// the best target the CPU supports). Rows are computed in tiles of a few rows times a few tokens,
// so each weight block is loaded and unpacked once per tile rather than once per token.
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/matmul.h"

namespace channel::cpu {

// Row ranges starting at multiples of this split into whole row tiles of every kernel (and
// whole Q4_0 row groups).
inline constexpr int64_t kDotRowGrain = 16;

struct DotRowsJob {
  const WeightMatrix* weights = nullptr;
  QuantAccumulation accumulation = QuantAccumulation::kEightLanes;  // Q4_0 / Q8_0 only
  Bf16Accumulation bf16_accumulation = Bf16Accumulation::kVectorLanes;  // BF16 only
  const PreparedActivations* activations = nullptr;  // prepared for weights->type
  std::span<const int32_t> row_ids;  // output row i is weight row row_ids[i]; empty: row i
  float* out = nullptr;              // out[t * out_stride + i] for token t, output row i
  int64_t out_stride = 0;
};

// Computes output rows [begin, end) of `job` for all tokens. Each output depends only on its
// weight row and token, never on how rows are split between calls.
void dot_rows(const DotRowsJob& job, int64_t begin, int64_t end);

}  // namespace channel::cpu
