// The host side of shaders/attention_step.glsl: which of the attention shaders' schemes a layer's
// attention takes for a step (tokens, head size, the attention view's length and first cell),
// and the AttentionStepParams the host writes for it. VulkanBackend writes these before every
// step (write_attention_steps); the attention kernel tests (tests/unit/gpu/attention_test.cpp)
// run the shaders on the same parameters, so that what they check is what the backend runs.
//
// The attention schemes of llama.cpp's CPU flash attention, which the CPU backend follows and the
// attention shaders reproduce (backend/cpu/attention.h): batches of 64+ tokens tiled (head sizes
// a multiple of 16), single tokens over 512+ padded cells split-KV, else one row. Here every
// batch of fewer than 64 tokens over 512+ padded cells is split-KV, not only single tokens: a
// one-row workgroup is a serial chain over every listed key (~0.75 us a key on the H200), so a
// 7-token probe after 512 tokens took 26.4 ms against 12.0 ms after 16 (H100, gemma4-12b preset),
// and with the ring full each layer would wait ~3 ms. Split-KV chunks are split_kv_chunk_keys
// listed keys each (tuning.h; longer where a batch's tokens would need more chunks than the
// partials hold), one workgroup per (token, head, chunk): the GPU's parallelism decides them, not
// llama.cpp's thread count (the CPU backend's chunks). From 512 cells on the partial sums are
// therefore grouped unlike the CPU backend's; the results stay within the thresholds
// (VulkanBackend.LongBatchAndSplitKvDecodeMatchTheCpu, VulkanAttention.*). H200, ring full: 60.4
// -> 90.1 tok/s with 64 chunks against the host's 16 (docs/benchmarks.md; measured with 64 chunks
// of cells); chunks of 32 keys instead of 64 then gave +10% on an H100 (tuning.cpp: the default
// since).
#pragma once

#include <cstdint>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/shader_push.h"

namespace channel::vulkan {

// The most split-KV chunks of chunk_keys listed keys a (token, head) may have: enough for a view
// of every slot. The partials buffer holds this many per head (for all of a step's tokens: a
// batch's chunks are lengthened to fit, split_chunk_keys in attention_step.cpp), and
// attention_combine.comp is specialized for it.
uint32_t split_kv_max_chunks(uint32_t chunk_keys);

// Whether a step's attention is tiled (attention.comp, else attention_rows.comp): decided by the
// step's shape alone, so that a recorded pass holds the right kernel for any view (whether it
// splits is the view's, and the pass's shape records it).
bool tiled_attention(uint32_t n_tokens, int head_dim);

// One layer's AttentionStepParams for a step of n_tokens tokens over a view of n_view listed keys
// whose first is at llama.cpp cell first_cell: the scheme (split-KV chunks of at least
// chunk_keys keys), and the workgroup counts of the attention dispatch (tiled: one per block of
// tiled_tokens tokens and head; split-KV: per token, head and chunk; one-row: per token and head)
// and of the combine dispatch (split-KV only: per token, head and slice of a head's dims), folded
// for `info` as CommandSequence::dispatch_groups folds.
AttentionStepParams attention_step_params(const DeviceInfo& info, uint32_t n_tokens, int head_dim, int n_head,
                                          uint32_t n_view, int32_t first_cell, uint32_t chunk_keys,
                                          uint32_t tiled_tokens);

}  // namespace channel::vulkan
