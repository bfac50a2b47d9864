// The push constants of the forward pass's shaders, laid out as their std430 blocks
// (shaders/*.comp): the backend records them, the kernel tests dispatch the shaders with them.
#pragma once

#include <cstdint>

#include "backend/vulkan/shaders/prefetch_layout.glsl"

namespace channel::vulkan {

struct EmbedPush {
  uint64_t table, scales, tokens, dst;
  uint32_t row_bytes, n_embd;
  float scale;
  uint32_t n_tokens;
};
static_assert(sizeof(EmbedPush) == 48);

struct NormPush {
  uint64_t x, weight, dst, residual;
  uint32_t n, x_stride, dst_stride;
  float eps, out_scale;
  uint32_t n_rows;
};
static_assert(sizeof(NormPush) == 56);

struct NormQuantizePush {
  uint64_t x, weight, residual, next_weight, q, d;
  uint32_t n;
  float eps, out_scale;
  uint32_t n_rows;
};
static_assert(sizeof(NormQuantizePush) == 64);

struct GegluQuantizePush {
  uint64_t gate, up, q, d, gelu_table;
  uint32_t n, pad;
};
static_assert(sizeof(GegluQuantizePush) == 48);

struct InputsPush {
  uint64_t q, k, v, q_out, q_norm, k_norm, rope, slots, k_cache, v_cache;
  uint32_t head_dim, n_head, n_head_kv, n_rot;
  float query_scale, eps;
  uint32_t v_norm, n_tokens;
  uint32_t projections_width, pad;  // q, k, v: this many values from one token's to the next
};
static_assert(sizeof(InputsPush) == 120);

struct AttentionPush {
  uint64_t q, k_cache, v_cache, view, slot_positions, positions, dst;
  uint32_t head_dim, n_head, n_head_kv;
  int32_t sliding_window;
  uint32_t n_tokens, pad;
  uint64_t step;  // the layer's AttentionStepParams
  uint64_t partials;
  uint64_t out_q, out_d;  // 0, or wo's Q8_0 activations (written instead of dst)
};
static_assert(sizeof(AttentionPush) == 112);

struct CombinePush {
  uint64_t partials, dst;
  uint64_t out_q, out_d;  // 0, or wo's Q8_0 activations (written instead of dst)
  uint64_t step;          // the layer's AttentionStepParams
  uint32_t n_rows, head_dim;  // n_rows: the step's tokens x query heads
};
static_assert(sizeof(CombinePush) == 48);

// One layer's attention parameters that depend on the step's attention view, written by the host
// before every step into a buffer the attention shaders read (shaders/attention_step.glsl), so
// that a recorded forward pass replays for any view; then the workgroup counts of its attention
// and split-KV combine dispatches, which are indirect for the same reason (VkDispatchIndirectCommand;
// no combine workgroups unless the scheme is split-KV).
struct AttentionStepParams {
  uint32_t n_view;
  int32_t first_cell;
  uint32_t scheme;  // 0 one-row, 1 split-KV, 2 tiled
  uint32_t n_chunks, chunk_cells;
  uint32_t attention_groups[3];
  uint32_t combine_groups[3];
  uint32_t pad;
};
static_assert(sizeof(AttentionStepParams) == 48);

struct GegluPush {
  uint64_t gate, up, dst, gelu_table;
  uint32_t n, pad;
};
static_assert(sizeof(GegluPush) == 40);

struct SoftcapPush {
  uint64_t x;
  uint32_t n;
  float cap, inverse_cap;
  uint32_t pad;
};
static_assert(sizeof(SoftcapPush) == 24);

struct RotatePush {
  uint64_t slots, first_move, cos_sin, k_cache, k_as_written;
  uint32_t n_head_kv, head_dim, n_rot, n_slots;
};
static_assert(sizeof(RotatePush) == 56);

struct CopyRowsPush {
  uint64_t src, dst, src_rows, dst_rows;
  uint32_t n, width;
};
static_assert(sizeof(CopyRowsPush) == 40);

struct PerLayerInputsPush {
  uint64_t projected, token_rows, norm, dst;
  uint32_t width, n_layer, n_tokens;
  float eps, projection_scale, token_scale, input_scale;
  uint32_t pad;
};
static_assert(sizeof(PerLayerInputsPush) == 64);

// prefetch.comp: up to kPrefetchRanges ranges of 16-byte words, read and XORed into the
// kPrefetchChecksumWords uints at `checksum` (workgroup w's into word w % kPrefetchChecksumWords).
constexpr int kPrefetchRanges = PREFETCH_RANGES;
constexpr uint32_t kPrefetchChecksumWords = PREFETCH_CHECKSUM_WORDS;
struct PrefetchPush {
  uint64_t checksum;
  uint64_t address[kPrefetchRanges];
  uint32_t words[kPrefetchRanges];
};
static_assert(sizeof(PrefetchPush) == 80);

}  // namespace channel::vulkan
