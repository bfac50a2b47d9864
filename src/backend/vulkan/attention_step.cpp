#include "backend/vulkan/attention_step.h"

#include <algorithm>

#include "backend/backend.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/shaders/shared_memory.glsl"

namespace channel::vulkan {
namespace {

struct AttentionScheme {
  uint32_t scheme = 0;  // 0 one-row, 1 split-KV, 2 tiled
  int32_t first_cell = 0;
  uint32_t n_chunks = 1, chunk_cells = 0;
};

// The keys of each split-KV chunk for n_tokens tokens over n_view listed keys: chunk_keys, or
// more where n_tokens x the chunks would pass the max_chunks partials a head has; 0 where even
// one chunk a token would.
uint32_t split_chunk_keys(uint32_t n_tokens, uint32_t n_view, uint32_t chunk_keys, uint32_t max_chunks) {
  const uint32_t chunks_per_token = max_chunks / n_tokens;
  if (chunks_per_token == 0) return 0;
  const uint32_t needed = (n_view + chunks_per_token - 1) / chunks_per_token;
  return std::max(chunk_keys, (needed + 15) / 16 * 16);  // whole batches of the split shape's default 16 keys
}

AttentionScheme attention_scheme(uint32_t n_tokens, int head_dim, uint32_t n_view, int32_t first_cell,
                                 uint32_t chunk_keys) {
  constexpr int64_t kSplitKvMinCells = 512, kCellPadding = 256;
  AttentionScheme a;
  a.first_cell = first_cell;
  const int64_t used = int64_t{first_cell} + n_view;
  const int64_t padded = std::max(kCellPadding, (used + kCellPadding - 1) / kCellPadding * kCellPadding);
  if (tiled_attention(n_tokens, head_dim)) {
    a.scheme = 2;
  } else if (padded >= kSplitKvMinCells) {
    const uint32_t keys = split_chunk_keys(n_tokens, n_view, chunk_keys, split_kv_max_chunks(chunk_keys));
    if (keys == 0) return a;
    a.scheme = 1;
    // Chunks over the list's positions: the shader's cell c is list index c.
    a.first_cell = 0;
    a.chunk_cells = keys;
    a.n_chunks = (n_view + keys - 1) / keys;
  }
  return a;
}

}  // namespace

uint32_t split_kv_max_chunks(uint32_t chunk_keys) { return (kKvSlots + chunk_keys - 1) / chunk_keys; }

bool tiled_attention(uint32_t n_tokens, int head_dim) { return n_tokens >= 64 && head_dim % 16 == 0; }

AttentionStepParams attention_step_params(const DeviceInfo& info, uint32_t n_tokens, int head_dim, int n_head,
                                          uint32_t n_view, int32_t first_cell, uint32_t chunk_keys,
                                          uint32_t tiled_tokens) {
  const AttentionScheme a = attention_scheme(n_tokens, head_dim, n_view, first_cell, chunk_keys);
  AttentionStepParams p{n_view, a.first_cell, a.scheme, a.n_chunks, a.chunk_cells, {}, {}, 0};
  const auto set_groups = [&](uint32_t (&groups)[3], uint64_t n_groups) {
    const WorkgroupGrid grid = fold_workgroups(info, n_groups);  // {0, 1} for none
    groups[0] = grid.x;
    groups[1] = grid.y;
    groups[2] = 1;
  };
  const bool split = a.scheme == 1;
  const uint64_t heads = static_cast<uint64_t>(n_head);
  set_groups(p.attention_groups, a.scheme == 2 ? uint64_t{groups_for(n_tokens, tiled_tokens)} * heads
                                               : uint64_t{n_tokens} * heads * (split ? a.n_chunks : 1));
  const uint64_t combine_slices =
      (static_cast<uint64_t>(head_dim) + SHARED_COMBINE_SLICE_DIMS - 1) / SHARED_COMBINE_SLICE_DIMS;
  set_groups(p.combine_groups, split ? uint64_t{n_tokens} * heads * combine_slices : 0);
  return p;
}

}  // namespace channel::vulkan
