// The Vulkan backend's per-device tuning: the kernels' shapes and budgets it picks from what the
// device reports, each overridable by a CHANNEL_VULKAN_* environment variable (for tuning on a
// new device; every value is checked, and a malformed one is a clear error naming the variable):
//   CHANNEL_VULKAN_MATVEC=threads,rows,subgroup_rows[,blocks[,split]]  matrix-vector shape
//   CHANNEL_VULKAN_MATMUL=rows_per_thread,k_blocks                    tiled kernel (TM, K_BLOCKS)
//   CHANNEL_VULKAN_COOPMAT=k_blocks[,tile_rows[,small_tile_rows[,small_tokens]]]  cooperative-matrix
//                                        kernel (0: off); batches up to small_tokens take small_tile_rows
//   CHANNEL_VULKAN_MATVEC_MAX_TOKENS=N   most tokens a matrix-vector product takes
//   CHANNEL_VULKAN_GATED_WORKGROUP=N     gated FFN kernel's threads per workgroup
//   CHANNEL_VULKAN_ATTENTION_TOKENS=N    tokens a tiled attention workgroup shares loads between
//   CHANNEL_VULKAN_NORM_WORKGROUP=N      norm_quantize.comp's threads per workgroup
//   CHANNEL_VULKAN_SPLIT_KV_KEYS=N       listed keys per chunk of split-KV decode attention
//   CHANNEL_VULKAN_ATTENTION_ROWS=batch,groups[,split_batch,split_groups]  decode attention's keys
//                                        per batch and groups of 64 invocations (attention_rows.comp),
//                                        one-row and split-KV
//   CHANNEL_VULKAN_PREFETCH_MB=N         MiB of weights each prefetch reads (0: none)
// and its diagnostic switches, 1 (on) or 0 (off, as when unset):
//   CHANNEL_VULKAN_PROFILE=1             GPU time per stage of the forward pass, printed at close
//   CHANNEL_VULKAN_PIPELINE_STATS=1      the driver's statistics of every pipeline, printed at close
//   CHANNEL_VULKAN_VALIDATION=1          Khronos validation layer on the instance
// Every CHANNEL_VULKAN_* variable the backend reads is read through this file.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/matmul_kernels.h"

namespace channel::vulkan {

// Whether diagnostic switch `name` (one of the three above) is 1; a value other than 0 or 1 fails.
bool diagnostic_switch(const char* name);

// The matrix kernels' options for this device (MatmulKernels checks them against it).
MatmulKernels::Options matmul_options(const DeviceInfo& info);

// Sets the matrix-vector shape of `options` from "threads,rows,subgroup_rows[,blocks[,split]]"
// (threads per workgroup, rows per workgroup, Q4_0 / Q8_0 rows per subgroup, blocks whose loads a
// lane issues together and the most subgroups sharing a group of rows); `what` names the
// setting in the error.
void parse_matvec_shape(std::string_view what, const std::string& text, MatmulKernels::Options& options);

// Tokens of one head per workgroup of the tiled (prefill) attention (attention.comp).
uint32_t tiled_attention_tokens(const DeviceInfo& info, uint32_t max_head_dim);

// norm_quantize.comp's workgroup; `cpu_workgroup` on CPU devices.
uint32_t norm_quantize_workgroup(const DeviceInfo& info, uint32_t cpu_workgroup);

// Listed keys per chunk of split-KV decode attention (attention_rows.comp scheme 1): a multiple
// of the split-KV shape's default 16-key batch (attention_rows_shapes), at most `max_keys`.
uint32_t split_kv_chunk_keys(uint32_t max_keys);

// attention_combine.comp's workgroup (groups of 64 invocations, one per dim of its slice of a
// head) for up to max_chunks chunks: 256 (four groups), or CHANNEL_VULKAN_COMBINE_WORKGROUP.
uint32_t combine_workgroup(const DeviceInfo& info, uint32_t max_chunks);

// attention_rows.comp's shape: keys per batch and groups of 64 invocations in its workgroup.
struct AttentionRowsShape {
  uint32_t key_batch = 16;
  uint32_t groups = 2;
};
// Its shapes for the one-row scheme (a workgroup per head, each a serial chain over all its keys)
// and for split-KV chunks (many workgroups, each over one short chunk).
struct AttentionRowsShapes {
  AttentionRowsShape one_row, split;
};
AttentionRowsShapes attention_rows_shapes(const DeviceInfo& info, uint32_t max_head_dim);
// attention_rows.comp's specialization constants for `shape` and the model's largest head size.
std::array<uint32_t, 5> attention_rows_constants(const AttentionRowsShape& shape, uint32_t max_head_dim, bool split);

// Bytes of weights each weight prefetch reads (weight_prefetch.h): `option` where given.
uint64_t prefetch_budget_bytes(const DeviceInfo& info, std::optional<uint64_t> option);

}  // namespace channel::vulkan
