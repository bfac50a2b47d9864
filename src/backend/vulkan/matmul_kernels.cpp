#include "backend/vulkan/matmul_kernels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <limits>
#include <string>

#include "backend/vulkan/shaders/shared_memory.glsl"
#include "core/error.h"

namespace channel::vulkan {
namespace {

static_assert(sizeof(MatmulPush) == 80 && offsetof(MatmulPush, n_out) == 48 && offsetof(MatmulPush, pad) == 76);

// matvec_q.comp with GATED_OUTPUT: MatmulPush for the gate matrix, then the up matrix's and the
// output's addresses.
struct GatedMatvecPush {
  MatmulPush matmul;
  uint64_t up, up_scales, out_scales, gelu_table;
};
static_assert(sizeof(GatedMatvecPush) == 112 && offsetof(GatedMatvecPush, up) == 80);
// matvec_q.comp HEAD_INPUTS.
struct HeadMatvecPush {
  MatmulPush matmul;
  uint64_t inputs, arrivals;
};
static_assert(sizeof(HeadMatvecPush) == 96 && offsetof(HeadMatvecPush, inputs) == 80);
constexpr uint32_t kGatedRows = SHARED_GATED_ROWS;            // 32 gate rows, then 32 up rows
constexpr int64_t kGatedMaxTokens = SHARED_GATED_MAX_TOKENS;  // the kernel's shared sums per row

// quantize_q8.comp
struct QuantizePush {
  uint64_t x, q, d;
  uint32_t n_tokens, cols, x_stride, pad;
};
static_assert(sizeof(QuantizePush) == 40);

// round_half.comp
struct RoundPush {
  uint64_t x, dst;
  uint32_t n_tokens, cols, x_stride, pad;
};
static_assert(sizeof(RoundPush) == 32);

constexpr uint32_t kQuantizeWorkgroup = 256;  // quantize_q8.comp local_size_x: values per workgroup
constexpr uint32_t kRoundWorkgroup = 256;    // round_half.comp local_size_x
constexpr int64_t kTileTokens = 64;          // matmul.comp BN
constexpr int64_t kCoopTileTokens = 64;       // matmul_coop.comp BN
uint64_t align16(uint64_t n) { return (n + 15) / 16 * 16; }

uint32_t to_u32(int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<uint32_t>::max()) fail("Vulkan matmul: {} = {} out of range", what, value);
  return static_cast<uint32_t>(value);
}

void check_alignment(VkDeviceAddress address, uint64_t alignment, const char* what) {
  if (address % alignment != 0) fail("Vulkan matmul: {} address not {}-byte aligned", what, alignment);
}

// The matrix-vector kernel's token block for n tokens: 1, 2, 4, 8 or 16 (each a pipeline). A
// block reads the weights once for all its tokens.
uint32_t tokens_per_pass(int64_t n_tokens) {
  uint32_t tokens = 1;
  while (tokens < 16 && tokens < n_tokens) tokens *= 2;
  return tokens;
}

std::string type_suffix(GgmlType type) { return std::string(ggml_type_traits(type).name); }

}  // namespace

MatmulKernels::MatmulKernels(Device& device, PipelineCache& pipelines) : MatmulKernels(device, pipelines, Options()) {}

MatmulKernels::MatmulKernels(Device& device, PipelineCache& pipelines, Options options)
    : device_(device), pipelines_(pipelines), options_(options) {
  const DeviceFeatures& f = device.info().features;
  switch (options.integer_dot) {
    case IntegerDot::kAuto: integer_dot_ = device.integer_dot_enabled() && f.integer_dot_4x8_accelerated; break;
    case IntegerDot::kOn:
      if (!device.integer_dot_enabled()) fail("Vulkan: {} has no integer dot product instructions", device.info().name);
      integer_dot_ = true;
      break;
    case IntegerDot::kOff: integer_dot_ = false; break;
  }
  if (options.matvec_workgroup == 0 || (options.matvec_workgroup & (options.matvec_workgroup - 1)) != 0 ||
      options.matvec_workgroup > device.info().max_workgroup_invocations || options.matvec_rows == 0 ||
      options.matvec_q_rows == 0 || options.matvec_subgroup_rows == 0 || options.matvec_q_blocks == 0 ||
      options.matvec_split == 0 || (options.matvec_split & (options.matvec_split - 1)) != 0) {
    fail("Vulkan: matrix-vector workgroup of {} threads, {} rows and {} subgroups a row is not possible on {}",
         options.matvec_workgroup, options.matvec_rows, options.matvec_split, device.info().name);
  }
  if (options.gated_workgroup == 0 || options.gated_workgroup > device.info().max_workgroup_invocations) {
    fail("Vulkan: a gated matrix-vector workgroup of {} threads is not possible on {} (1 to {})",
         options.gated_workgroup, device.info().name, device.info().max_workgroup_invocations);
  }
  const uint64_t tile_shared = 4u * static_cast<uint64_t>(SHARED_MATMUL_WORDS(
                                         options.tiled_k_blocks, 16u * options.tiled_rows_per_thread, kTileTokens));
  if ((options.tiled_rows_per_thread != 4 && options.tiled_rows_per_thread != 8) || options.tiled_k_blocks == 0 ||
      tile_shared > device.info().max_compute_shared_memory) {
    fail("Vulkan: a matrix tile of {} rows per thread and {} blocks per step ({} bytes of shared memory) is not "
         "possible on {} (4 or 8 rows; {} bytes at most)",
         options.tiled_rows_per_thread, options.tiled_k_blocks, tile_shared, device.info().name,
         device.info().max_compute_shared_memory);
  }
  for (const uint32_t tile_rows : {options.cooperative_tile_rows, options.cooperative_small_batch_tile_rows}) {
    const uint64_t coop_shared = 4u * static_cast<uint64_t>(SHARED_COOP_WORDS(
                                           options.cooperative_k_blocks, tile_rows, kCoopTileTokens,
                                           device.int8_matrix_n()));
    if (device.int8_matrix_n() != 0 && (options.cooperative_k_blocks == 0 || (tile_rows != 64 && tile_rows != 128) ||
                                        coop_shared > device.info().max_compute_shared_memory)) {
      fail("Vulkan: a cooperative-matrix tile of {} rows (64 or 128) and {} blocks per step ({} bytes of shared "
           "memory) is not possible on {}",
           tile_rows, options.cooperative_k_blocks, coop_shared, device.info().name);
    }
  }
}

bool MatmulKernels::shares_activations(GgmlType prepared_for, GgmlType weight_type) {
  return prepared_for == weight_type || (is_quantized(prepared_for) && is_quantized(weight_type));
}

uint64_t MatmulKernels::scratch_bytes(GgmlType weight_type, int64_t n_tokens, int64_t cols) {
  const uint64_t n = static_cast<uint64_t>(n_tokens) * static_cast<uint64_t>(cols);
  switch (weight_type) {
    case GgmlType::F32: return 0;
    case GgmlType::F16:
    case GgmlType::BF16: return n * 2;
    case GgmlType::Q4_0:
    case GgmlType::Q8_0: return align16(n) + n / kQuantBlock * sizeof(float);
  }
  return 0;
}

MatmulKernels::QuantMatvecShape MatmulKernels::quant_matvec_shape(int64_t cols) const {
  const uint64_t blocks_per_trip = uint64_t{std::max(1u, device_.info().subgroup_size)} * options_.matvec_q_blocks;
  const uint64_t n_blocks = static_cast<uint64_t>(cols) / kQuantBlock;
  uint32_t split = 1;
  while (split * 2 <= options_.matvec_split && n_blocks >= 2 * (split * 2) * blocks_per_trip) split *= 2;
  return {std::max(1u, options_.matvec_q_rows / split), split};
}

MatmulKernels::MatvecKernel MatmulKernels::matvec_kernel(GgmlType type, int64_t cols, uint32_t tokens,
                                                         uint32_t max_head_dim) {
  const uint32_t workgroup = options_.matvec_workgroup;
  const uint32_t min_subgroup = std::max(1u, device_.info().min_subgroup_size);
  if (is_quantized(type)) {
    const QuantMatvecShape shape = quant_matvec_shape(cols);
    const std::string form = max_head_dim != 0 ? "matvec_heads_" : "matvec_q_";
    const uint32_t specialization[] = {workgroup,
                                       shape.rows,
                                       options_.matvec_subgroup_rows,
                                       tokens,
                                       options_.matvec_q_blocks,
                                       shape.split,
                                       workgroup / min_subgroup,
                                       max_head_dim};
    // The plain form has no constants 6 and 7.
    const std::span<const uint32_t> used(specialization, max_head_dim != 0 ? 8 : 6);
    return {pipelines_.get(form + type_suffix(type) + (integer_dot_ ? "_dot" : ""), used), shape.rows};
  }
  const uint32_t specialization[] = {workgroup, options_.matvec_rows, tokens, (workgroup + min_subgroup - 1) / min_subgroup};
  return {pipelines_.get("matvec_" + type_suffix(type), specialization), options_.matvec_rows};
}

uint32_t MatmulKernels::cooperative_tile_rows(int64_t n_tokens) const {
  return n_tokens <= options_.cooperative_small_batch_tokens ? options_.cooperative_small_batch_tile_rows
                                                             : options_.cooperative_tile_rows;
}

const ComputePipeline& MatmulKernels::cooperative_pipeline(GgmlType type, uint32_t tile_rows) {
  const uint32_t specialization[] = {options_.cooperative_k_blocks};
  return pipelines_.get(fmt::format("matmul_coop_{}_{}", type_suffix(type), tile_rows), specialization);
}

const ComputePipeline& MatmulKernels::tiled_pipeline(GgmlType type) {
  const uint32_t specialization[] = {options_.tiled_rows_per_thread, options_.tiled_k_blocks};
  return pipelines_.get("matmul_" + type_suffix(type) + (is_quantized(type) && integer_dot_ ? "_dot" : ""),
                        specialization);
}

PreparedActivations MatmulKernels::quantized_layout(GgmlType weight_type, int64_t n_tokens, int64_t cols,
                                                    VkDeviceAddress scratch) {
  if (!is_quantized(weight_type)) fail("internal: quantized_layout for {} weights", ggml_type_traits(weight_type).name);
  PreparedActivations prepared;
  prepared.weight_type = weight_type;
  prepared.n_tokens = n_tokens;
  prepared.cols = cols;
  prepared.values = scratch;
  prepared.scales = scratch + align16(static_cast<uint64_t>(n_tokens) * static_cast<uint64_t>(cols));
  prepared.stride = cols;
  return prepared;
}

PreparedActivations MatmulKernels::record_prepare(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress x,
                                                  int64_t n_tokens, int64_t cols, int64_t x_stride,
                                                  VkDeviceAddress scratch) {
  if (n_tokens < 0 || cols <= 0 || x_stride < cols) {
    fail("Vulkan matmul: activations of {} tokens x {} values with stride {}", n_tokens, cols, x_stride);
  }
  if (is_quantized(weight_type) && cols % kQuantBlock != 0) {
    fail("Vulkan matmul: {} weights need a multiple of {} columns, not {}", ggml_type_traits(weight_type).name,
         kQuantBlock, cols);
  }
  check_alignment(x, 4, "activation");
  PreparedActivations prepared;
  prepared.weight_type = weight_type;
  prepared.n_tokens = n_tokens;
  prepared.cols = cols;
  if (weight_type == GgmlType::F32) {
    prepared.values = x;
    prepared.stride = x_stride;
    return prepared;
  }
  check_alignment(scratch, 16, "scratch");
  if (is_quantized(weight_type)) {
    prepared = quantized_layout(weight_type, n_tokens, cols, scratch);
  } else {
    prepared.values = scratch;
    prepared.stride = cols;
  }
  const uint64_t n = static_cast<uint64_t>(n_tokens) * static_cast<uint64_t>(cols);
  if (n == 0) return prepared;
  if (is_quantized(weight_type)) {
    const QuantizePush push{x, prepared.values, prepared.scales, to_u32(n_tokens, "n_tokens"), to_u32(cols, "cols"),
                            to_u32(x_stride, "x_stride"), 0};
    to_u32(static_cast<int64_t>(n), "values");
    seq.dispatch_groups(pipelines_.get("quantize_q8_0"), push, (n + kQuantizeWorkgroup - 1) / kQuantizeWorkgroup);
  } else {
    const RoundPush push{x, prepared.values, to_u32(n_tokens, "n_tokens"), to_u32(cols, "cols"),
                         to_u32(x_stride, "x_stride"), 0};
    to_u32(static_cast<int64_t>(n), "values");
    seq.dispatch_groups(pipelines_.get(weight_type == GgmlType::F16 ? "round_f16" : "round_bf16"), push,
                        (n + kRoundWorkgroup - 1) / kRoundWorkgroup);
  }
  return prepared;
}

void MatmulKernels::record_matmul(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x,
                                  VkDeviceAddress out, int64_t out_stride, MatmulKernel kernel) {
  record(seq, w, x, 0, w.rows, out, out_stride, kernel);
}

void MatmulKernels::record_matmul_rows(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x,
                                       VkDeviceAddress row_ids, int64_t n_rows, VkDeviceAddress out,
                                       int64_t out_stride, MatmulKernel kernel) {
  if (row_ids == 0) fail("Vulkan matmul_rows: no row ids");
  check_alignment(row_ids, 4, "row id");
  record(seq, w, x, row_ids, n_rows, out, out_stride, kernel);
}

MatmulPush MatmulKernels::matmul_push(const DeviceMatrix& w, const PreparedActivations& x, VkDeviceAddress row_ids,
                                      int64_t n_out, VkDeviceAddress out, int64_t out_stride) const {
  if (!shares_activations(x.weight_type, w.type)) {
    fail("Vulkan matmul: activations prepared for {} weights used with {} weights", ggml_type_traits(x.weight_type).name,
         ggml_type_traits(w.type).name);
  }
  if (x.cols != w.cols) fail("Vulkan matmul: {} activation values for rows of {}", x.cols, w.cols);
  if (w.row_bytes != device_row_bytes(w.type, w.cols)) {
    fail("Vulkan matmul: row_bytes {} does not match {} {} values", w.row_bytes, ggml_type_traits(w.type).name, w.cols);
  }
  if (out_stride < n_out) fail("Vulkan matmul: output stride {} below {} rows", out_stride, n_out);
  if (is_quantized(w.type)) {
    if (w.scales == 0) fail("Vulkan matmul: {} weights without scales", ggml_type_traits(w.type).name);
    check_alignment(w.data, 16, "weight quants");
    check_alignment(w.scales, 2, "weight scales");
  } else {
    check_alignment(w.data, w.type == GgmlType::F32 ? 4 : 2, "weight");
  }
  check_alignment(out, 4, "output");

  MatmulPush push{};
  push.w = w.data;
  push.w_scales = w.scales;
  push.x = x.values;
  push.x_scales = x.scales;
  push.dst = out;
  push.row_ids = row_ids;
  push.n_out = to_u32(n_out, "output rows");
  push.cols = to_u32(w.cols, "cols");
  push.n_tokens = to_u32(x.n_tokens, "n_tokens");
  push.w_row_bytes = to_u32(static_cast<int64_t>(w.row_bytes), "row bytes");
  push.x_stride = to_u32(x.stride, "activation stride");
  push.dst_stride = to_u32(out_stride, "output stride");
  push.w_rows = to_u32(w.rows, "weight rows");
  return push;
}

void MatmulKernels::record(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x,
                           VkDeviceAddress row_ids, int64_t n_out, VkDeviceAddress out, int64_t out_stride,
                           MatmulKernel kernel) {
  const MatmulPush push = matmul_push(w, x, row_ids, n_out, out, out_stride);
  if (x.n_tokens == 0 || n_out == 0) return;

  if (kernel == MatmulKernel::kAuto) {
    const bool cooperative = options_.cooperative_matrix && is_quantized(w.type) && has_cooperative();
    kernel = auto_picks_matvec(x.n_tokens) ? MatmulKernel::kMatvec
             : cooperative                 ? MatmulKernel::kCooperative
                                           : MatmulKernel::kTiled;
  }
  if (kernel == MatmulKernel::kCooperative) {
    if (!is_quantized(w.type) || !has_cooperative()) {
      fail("Vulkan matmul: no cooperative-matrix kernel for {} weights on {}", ggml_type_traits(w.type).name,
           device_.info().name);
    }
    const uint32_t tile_rows = cooperative_tile_rows(x.n_tokens);
    const int64_t groups_x = (n_out + tile_rows - 1) / tile_rows;
    const int64_t groups_y = (x.n_tokens + kCoopTileTokens - 1) / kCoopTileTokens;
    seq.dispatch(cooperative_pipeline(w.type, tile_rows), push, to_u32(groups_x, "row tiles"), to_u32(groups_y, "token tiles"));
    return;
  }
  if (kernel == MatmulKernel::kMatvec) {
    const MatvecKernel matvec = matvec_kernel(w.type, w.cols, tokens_per_pass(x.n_tokens));
    const uint64_t groups = (static_cast<uint64_t>(n_out) + matvec.rows - 1) / matvec.rows;
    seq.dispatch_groups(matvec.pipeline, push, groups);
  } else {
    const int64_t tile_rows = 16 * int64_t{options_.tiled_rows_per_thread};
    const int64_t groups_x = (n_out + tile_rows - 1) / tile_rows;
    const int64_t groups_y = (x.n_tokens + kTileTokens - 1) / kTileTokens;
    seq.dispatch(tiled_pipeline(w.type), push, to_u32(groups_x, "row tiles"), to_u32(groups_y, "token tiles"));
  }
}

bool MatmulKernels::head_matvec_applies(const DeviceMatrix& qkv, int head_dim, const PreparedActivations& x) const {
  // One token only: a head's last workgroup prepares the head token by token, a chain per token
  // where the separate dispatch has a workgroup per (token, head). H100, Gemma 3 12B, 16-token
  // steps: 382 us a layer for the fused product against 180 + 23 us apart.
  return options_.head_inputs && is_quantized(qkv.type) && x.n_tokens == 1 && auto_picks_matvec(1) &&
         head_dim > 0 &&
         head_dim % quant_matvec_shape(qkv.cols).rows == 0 && qkv.rows % head_dim == 0;
}

void MatmulKernels::record_head_matvec(CommandSequence& seq, const DeviceMatrix& qkv, const PreparedActivations& x,
                                       VkDeviceAddress out, int64_t out_stride, int head_dim, int max_head_dim,
                                       VkDeviceAddress inputs, VkDeviceAddress arrivals) {
  if (!head_matvec_applies(qkv, head_dim, x) || max_head_dim < head_dim) {
    fail("internal: the head matrix-vector kernel for {} x {} {} weights, heads of {} at {} tokens", qkv.rows,
         qkv.cols, ggml_type_traits(qkv.type).name, head_dim, x.n_tokens);
  }
  check_alignment(inputs, 8, "attention inputs' parameters");
  check_alignment(arrivals, 4, "arrival counts");
  const HeadMatvecPush push{matmul_push(qkv, x, 0, qkv.rows, out, out_stride), inputs, arrivals};
  const MatvecKernel matvec =
      matvec_kernel(qkv.type, qkv.cols, tokens_per_pass(x.n_tokens), static_cast<uint32_t>(max_head_dim));
  seq.dispatch_groups(matvec.pipeline, push, static_cast<uint64_t>(qkv.rows) / matvec.rows);
}

bool MatmulKernels::gated_matvec_applies(const DeviceMatrix& gate, const DeviceMatrix& up, GgmlType down_type,
                                         const PreparedActivations& x) const {
  return is_quantized(gate.type) && up.type == gate.type && up.rows == gate.rows && up.cols == gate.cols &&
         is_quantized(down_type) && gate.rows % kQuantBlock == 0 && x.n_tokens >= 1 &&
         x.n_tokens <= std::min(options_.matvec_max_tokens, kGatedMaxTokens);
}

void MatmulKernels::record_gated_matvec(CommandSequence& seq, const DeviceMatrix& gate, const DeviceMatrix& up,
                                        const PreparedActivations& x, VkDeviceAddress gelu_table,
                                        const PreparedActivations& out) {
  if (!gated_matvec_applies(gate, up, out.weight_type, x)) {
    fail("internal: the gated matrix-vector kernel for {} x {} {} weights at {} tokens", gate.rows, gate.cols,
         ggml_type_traits(gate.type).name, x.n_tokens);
  }
  if (out.n_tokens != x.n_tokens || out.cols != gate.rows || out.stride != out.cols) {
    fail("internal: gated matrix-vector output of {} x {} values for {} x {}", out.n_tokens, out.cols, x.n_tokens,
         gate.rows);
  }
  check_alignment(out.values, 16, "gated output");
  GatedMatvecPush push{};
  push.matmul = matmul_push(gate, x, 0, gate.rows, out.values, out.stride);
  // Also checks the up matrix against the activations.
  const MatmulPush up_push = matmul_push(up, x, 0, up.rows, out.values, out.stride);
  push.up = up_push.w;
  push.up_scales = up_push.w_scales;
  push.out_scales = out.scales;
  push.gelu_table = gelu_table;
  // Subgroups do not share rows here: the gated kernel's 64 rows take several passes, and a team's
  // barriers in each pass hold its subgroups in step. H100, Gemma 3 12B decode, one call, teams on
  // both kernels: 256 threads in teams of 4 141.9-142.5 tok/s, 512 in teams of 2 146.3-147.0,
  // 1024 in teams of 4 133.2-134.5, against 153.3-153.7 with no teams.
  constexpr uint32_t kGatedSplit = 1;
  const uint32_t specialization[] = {options_.gated_workgroup, kGatedRows, options_.matvec_subgroup_rows,
                                     tokens_per_pass(x.n_tokens), options_.matvec_q_blocks, kGatedSplit};
  const ComputePipeline& pipeline =
      pipelines_.get("matvec_gated_" + type_suffix(gate.type) + (integer_dot_ ? "_dot" : ""), specialization);
  seq.dispatch_groups(pipeline, push, static_cast<uint64_t>(gate.rows) / kQuantBlock);
}

}  // namespace channel::vulkan
