// Dot products of Q4_0 row-group matrices (q4_0_row_groups.h) with prepared activations: one
// output row per 32-bit lane, the same integer sums and f32 steps (kBlockSequential) as the GGUF
// layout's kernels. Highway, dispatched at run time like dot_kernels.h.
#pragma once

#include <cstdint>

#include "backend/cpu/dot_kernels.h"
#include "backend/cpu/q4_0_row_groups.h"

namespace channel::cpu {

// dot_rows for a job whose weights have layout kQ4_0RowGroups: output rows [begin, end), both
// multiples of kRowGroupRows (as kDotRowGrain is), for all tokens; row_ids must be empty.
void dot_q4_0_row_groups(const DotRowsJob& job, int64_t begin, int64_t end);

}  // namespace channel::cpu
