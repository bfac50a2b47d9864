// Dot products of row-group matrices (row_groups.h) with prepared activations: one output row per
// 32-bit lane, the same integer sums and f32 steps as the GGUF layout's kernels for the type
// (Q4_0: kBlockSequential, Q8_0: kEightLanes). Highway, dispatched at run time like dot_kernels.h.
#pragma once

#include <cstdint>

#include "backend/cpu/dot_kernels.h"
#include "backend/cpu/row_groups.h"

namespace channel::cpu {

// dot_rows for a job whose weights have layout kRowGroups: output rows [begin, end), both
// multiples of kRowGroupRows (as kDotRowGrain is), for all tokens; row_ids must be empty.
void dot_row_groups(const DotRowsJob& job, int64_t begin, int64_t end);

}  // namespace channel::cpu
