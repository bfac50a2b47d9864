// Matrix times activations on the device, for the five GGUF weight types the CPU backend
// supports, with the CPU backend's numerics (backend/cpu/matmul.h):
//   out[t * out_stride + i] = sum_c W[row i][c] * x[t][c]
//   Q4_0 / Q8_0: activations quantized per 32-block to Q8_0 exactly as the CPU does, block dot
//                products in exact int32 (integer dot product instructions where the device
//                accelerates them), scaled by d_w * d_x and summed in f32;
//   F16 / BF16:  activations rounded to f16 / bf16 exactly as the CPU does, f32 products and sums;
//   F32:         f32 products and sums.
// Only the order of the f32 additions differs from the CPU (thread partial sums reduced in a
// tree in the matrix-vector kernel; the tiled kernel adds in the CPU's scalar order).
//
// Two steps, recorded separately so that one conversion serves several matrices of one input
// (Q, K and V projections; gate and up):
//   PreparedActivations a = kernels.record_prepare(seq, type, x, n_tokens, cols, x_stride, scratch);
//   seq.barrier();
//   kernels.record_matmul(seq, w_q, a, q_out, n_q);  kernels.record_matmul(seq, w_k, a, k_out, n_k);
//   seq.barrier();  // before anything reads q_out / k_out
// Kernels: kMatvec streams the weights once per few tokens (decode; memory-bound; Q4_0 / Q8_0 in
// matvec_q.comp, a subgroup per group of rows), kTiled reads each weight tile once per 64
// tokens through shared memory (prefill), kCooperative is kTiled for Q4_0 / Q8_0 with the block
// sums on the matrix units (matmul_coop.comp; bit-identical to kTiled). kAuto picks kMatvec up to
// Options::matvec_max_tokens tokens, above that kCooperative where the device has int8
// cooperative matrices (and Options::cooperative_matrix allows them), else kTiled. Weights are in
// the device layout of device_matrix.h (Q4_0 / Q8_0 as split blocks).
#pragma once

#include <cstdint>

#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/device_matrix.h"
#include "backend/vulkan/pipeline.h"
#include "model/ggml_type.h"

namespace channel::vulkan {

// Activations converted for one weight type's kernels (the CPU's PreparedActivations):
//   F32 weights:         the f32 input itself (values = x, stride = x_stride);
//   F16 / BF16 weights:  16-bit values [n_tokens][cols] in the scratch buffer;
//   Q4_0 / Q8_0 weights: int8 values [n_tokens][cols] (4 per uint) and f32 block scales
//                        [n_tokens][cols / 32] in the scratch buffer.
struct PreparedActivations {
  GgmlType weight_type = GgmlType::F32;
  VkDeviceAddress values = 0;
  VkDeviceAddress scales = 0;
  int64_t n_tokens = 0;
  int64_t cols = 0;
  int64_t stride = 0;  // elements (Q8_0: bytes) from one token's values to the next
};

enum class MatmulKernel { kAuto, kMatvec, kTiled, kCooperative };

// Push constants of the matrix kernels (shaders/matmul_params.glsl).
struct MatmulPush {
  uint64_t w, w_scales, x, x_scales, dst, row_ids;
  uint32_t n_out, cols, n_tokens, w_row_bytes, x_stride, dst_stride, w_rows, pad;
};
// Integer dot product instructions for Q4_0 / Q8_0: kAuto uses them where the device has them
// accelerated (integerDotProduct4x8BitPackedSignedAccelerated), kOn wherever supported.
enum class IntegerDot { kAuto, kOn, kOff };

class MatmulKernels {
 public:
  struct Options {
    IntegerDot integer_dot = IntegerDot::kAuto;
    uint32_t matvec_workgroup = 128;     // threads per matrix-vector workgroup (a power of two)
    uint32_t matvec_rows = 2;            // F32 / F16 / BF16: weight rows per matrix-vector workgroup
    // Q4_0 / Q8_0: weight rows per matrix-vector workgroup. 8 (each of 4 subgroups one group of 2
    // rows) beat 16, 32 and 4 on the H200: Gemma 3 12B's matrices of one token in 3.49 ms against
    // 4.64 with 16 (channel_vulkan_matvec_bench).
    uint32_t matvec_q_rows = 8;
    uint32_t matvec_subgroup_rows = 2;   // Q4_0 / Q8_0: rows a subgroup computes together
    uint32_t matvec_q_blocks = 2;        // Q4_0 / Q8_0: blocks per lane whose loads are issued together
    // Q4_0 / Q8_0: the most subgroups sharing a group of rows (a power of two). A matrix gets
    // them where its rows are long enough for each lane to make at least two trips over a row's
    // blocks (quant_matvec_shape); its workgroups then cover matvec_q_rows / split rows. On the
    // H100 (Gemma 3 12B) only ffn_down qualifies, with 2: 18.9 -> 16.4 us a product
    // (channel_vulkan_matvec_bench), decode 147.1-152.9 -> 151.5-154.2 tok/s in one call; teams on
    // every matrix (3840-wide rows too) measured 16.4 us for ffn_down but 152.1-153.1 tok/s
    // against 155.3-157.1 without.
    uint32_t matvec_split = 2;
    // kAuto: kMatvec up to this many tokens (at most 16: one pass of the kernel), the matrix
    // kernels above. H100, Gemma 3 12B, `channel bench --gpu -p 16 -n 1 -r 10` in one call: pp16
    // 670.0 tok/s with 16 against 360.7 with 8 (the cooperative kernel's 16-token products: down
    // 472 us a layer against 120). On the H200 pp64 ran at 872 tok/s with 64 against 1298 with
    // the cooperative kernel above 8 tokens.
    int64_t matvec_max_tokens = 16;
    uint32_t tiled_rows_per_thread = 4;  // matmul.comp TM: a tile of 16 x this many rows (4 or 8)
    uint32_t tiled_k_blocks = 2;         // matmul.comp K_BLOCKS: Q4_0 / Q8_0 blocks per step
    bool cooperative_matrix = true;      // kAuto may pick kCooperative (where the device has it)
    // matmul_coop.comp K_BLOCKS, blocks per step, and BM, weight rows per tile (64 or 128). H200,
    // Gemma 3 12B pp512 (tok/s): 4 blocks and 128 rows 3528-3534, 2 and 128 3421-3424, 6 and 128
    // 3178-3182, 8 and 64 3115-3120, 4 and 64 3285-3292.
    uint32_t cooperative_k_blocks = 4;
    uint32_t cooperative_tile_rows = 128;
    // BM for batches of at most cooperative_small_batch_tokens tokens: a grid of few token tiles
    // leaves much of the device idle with large tiles. H100, Gemma 3 12B, one call (`channel
    // bench --gpu -n 1 -r 5`), prefill tok/s with 64-row tiles against 128 at every batch size:
    // pp64 1883.7 / 1330.0, pp128 2897.7 / 2278.5, pp256 3631.5 / 3383.2, pp512 3589.0 / 3938.9.
    uint32_t cooperative_small_batch_tile_rows = 64;
    int64_t cooperative_small_batch_tokens = 256;
    // Threads per workgroup of the gated matrix-vector kernel (64 rows a workgroup). On the H100
    // (Gemma 3 12B decode, one call): 256 threads 150.0 / 150.8 tok/s, 1024 (all 64 rows in one
    // pass) 141.3 / 140.7, the separate kernels 148.4 / 149.8.
    uint32_t gated_workgroup = 256;
    // A layer's Q/K/V product and its heads' attention inputs in one dispatch where
    // head_matvec_applies (CHANNEL_VULKAN_HEAD_INPUTS=0: two dispatches).
    bool head_inputs = true;
  };

  MatmulKernels(Device& device, PipelineCache& pipelines);
  MatmulKernels(Device& device, PipelineCache& pipelines, Options options);

  // Whether activations prepared for `prepared_for` weights serve `weight_type` weights: Q4_0 and
  // Q8_0 both read Q8_0 activations (llama.cpp's vec_dot_type of both), every other type its own.
  static bool shares_activations(GgmlType prepared_for, GgmlType weight_type);

  // Bytes of scratch record_prepare needs for this weight type (0 for F32).
  static uint64_t scratch_bytes(GgmlType weight_type, int64_t n_tokens, int64_t cols);

  // Where record_prepare puts Q4_0 / Q8_0 activations of n_tokens x cols values in `scratch`:
  // for kernels that write them directly (a norm or GEGLU fused with the quantization).
  static PreparedActivations quantized_layout(GgmlType weight_type, int64_t n_tokens, int64_t cols,
                                              VkDeviceAddress scratch);

  // Records the conversion of f32 activations x ([n_tokens][x_stride], 4-byte aligned) for
  // `weight_type`'s kernels into `scratch` (16-byte aligned, scratch_bytes() long; unused for
  // F32). Needs a barrier before the matrix kernels read the result.
  PreparedActivations record_prepare(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress x, int64_t n_tokens,
                                     int64_t cols, int64_t x_stride, VkDeviceAddress scratch);

  // out[t * out_stride + i] = dot(row i of w, token t), t < x.n_tokens, i < w.rows.
  void record_matmul(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x, VkDeviceAddress out,
                     int64_t out_stride, MatmulKernel kernel = MatmulKernel::kAuto);

  // The rows `row_ids` (n_rows int32 in device memory) only: out[t * out_stride + i] =
  // dot(row row_ids[i] of w, token t). The CPU's matmul_rows, for probe candidates. An id
  // outside [0, w.rows) yields NaN outputs (the device cannot throw: check ids before upload).
  void record_matmul_rows(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x,
                          VkDeviceAddress row_ids, int64_t n_rows, VkDeviceAddress out, int64_t out_stride,
                          MatmulKernel kernel = MatmulKernel::kAuto);

  // Whether record_gated_matvec serves an FFN with these matrices at x.n_tokens tokens: quantized
  // gate and up of one type and shape, a quantized down product, the matrix-vector kernel's
  // token counts (kAuto's choice, at most 16).
  bool gated_matvec_applies(const DeviceMatrix& gate, const DeviceMatrix& up, GgmlType down_type,
                            const PreparedActivations& x) const;
  // out = the Q8_0 activations (quantized_layout for a Q4_0 / Q8_0 down product, n_tokens x
  // gate.rows) of GEGLU(gate x, up x) (gelu.glsl, `gelu_table` its table): the two products,
  // geglu_quantize.comp's values and their blocks in one dispatch, bit-identical to
  // record_matmul of each matrix then geglu_quantize.comp. Needs gated_matvec_applies.
  void record_gated_matvec(CommandSequence& seq, const DeviceMatrix& gate, const DeviceMatrix& up,
                           const PreparedActivations& x, VkDeviceAddress gelu_table, const PreparedActivations& out);

  // Whether record_head_matvec serves a layer's stacked Q/K/V product `qkv` (heads of head_dim
  // rows) at x.n_tokens: quantized, one token (decode), a workgroup's rows within one head, and
  // Options::head_inputs.
  bool head_matvec_applies(const DeviceMatrix& qkv, int head_dim, const PreparedActivations& x) const;
  // The Q/K/V product into `out` and each head's attention inputs (attention_inputs.glsl: the
  // queries to q_out, the keys and values to the KV cache) in one dispatch, bit-identical to
  // record_matmul then attention_inputs.comp. `inputs`: the layer's InputsParams (InputsPush) in
  // device memory, 8-byte aligned; `arrivals`: a uint per head of rows, zero (and zero again
  // after the dispatch). Needs head_matvec_applies.
  void record_head_matvec(CommandSequence& seq, const DeviceMatrix& qkv, const PreparedActivations& x,
                          VkDeviceAddress out, int64_t out_stride, int head_dim, int max_head_dim,
                          VkDeviceAddress inputs, VkDeviceAddress arrivals);

  // Whether kAuto streams the weights through the matrix-vector kernel for n_tokens tokens.
  bool auto_picks_matvec(int64_t n_tokens) const { return n_tokens <= options_.matvec_max_tokens; }
  // Whether Q4_0 / Q8_0 kernels use integer dot product instructions.
  bool uses_integer_dot() const { return integer_dot_; }
  // Whether kCooperative can run here (the device has int8 cooperative matrices).
  bool has_cooperative() const { return device_.int8_matrix_n() != 0; }

 private:
  void record(CommandSequence& seq, const DeviceMatrix& w, const PreparedActivations& x, VkDeviceAddress row_ids,
              int64_t n_out, VkDeviceAddress out, int64_t out_stride, MatmulKernel kernel);
  // The quantized matrix-vector kernel's rows per workgroup and subgroups a row for rows of
  // `cols` values (Options::matvec_split).
  struct QuantMatvecShape {
    uint32_t rows;
    uint32_t split;
  };
  QuantMatvecShape quant_matvec_shape(int64_t cols) const;
  // The matrix-vector pipeline for a matrix of `type` with rows of `cols` values, and the rows each
  // of its workgroups covers.
  struct MatvecKernel {
    const ComputePipeline& pipeline;
    uint32_t rows;
  };
  // max_head_dim != 0: the HEAD_INPUTS form for heads up to that size.
  MatvecKernel matvec_kernel(GgmlType type, int64_t cols, uint32_t tokens_per_pass, uint32_t max_head_dim = 0);
  MatmulPush matmul_push(const DeviceMatrix& w, const PreparedActivations& x, VkDeviceAddress row_ids, int64_t n_out,
                         VkDeviceAddress out, int64_t out_stride) const;
  const ComputePipeline& tiled_pipeline(GgmlType type);
  // matmul_coop.comp's BM for a batch of n_tokens.
  uint32_t cooperative_tile_rows(int64_t n_tokens) const;
  const ComputePipeline& cooperative_pipeline(GgmlType type, uint32_t tile_rows);

  Device& device_;
  PipelineCache& pipelines_;
  Options options_;
  bool integer_dot_ = false;
};

}  // namespace channel::vulkan
