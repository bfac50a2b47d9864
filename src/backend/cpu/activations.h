// The activations of one matmul call, converted once into what the weight type's dot products
// read (llama.cpp converts src1 to the weight type's vec_dot_type the same way):
//   Q4_0 / Q8_0 weights: Q8_0 blocks (activation_quant.h), stored widened for the int16 kernels;
//   F16 / BF16 weights:  values rounded to f16 / bf16 (nearest even), kept as exact f32;
//   F32 weights:         the f32 values as given.
#pragma once

#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "model/ggml_type.h"

namespace channel::cpu {

// A Q8_0 activation block split into its even (0, 2, .., 30) and odd (1, 3, .., 31) elements,
// widened to int16: the operand layout of the int16 multiply-add kernels (dot_kernels.cpp).
struct WideQ8Block {
  int16_t even[kQuantBlock / 2];
  int16_t odd[kQuantBlock / 2];
};

// The storage of PreparedActivations, kept by a caller from one product to the next so that a
// decode step allocates nothing: the vectors only grow. One PreparedActivations at a time uses it.
struct ActivationBuffers {
  std::vector<BlockQ8_0> q8_blocks;
  std::vector<WideQ8Block> wide_blocks;
  std::vector<float> q8_scales;
  std::vector<int32_t> q8_sums;
  std::vector<int32_t> q8_unit_offsets;  // Q8_0 weights only
  std::vector<float> rounded;  // F16 / BF16 weights
};

class PreparedActivations {
 public:
  // x holds n_tokens rows of `cols` values; it must outlive this object for F32 weights. With a
  // pool the tokens are converted over its threads (a prefill's activations are ~1% of its time
  // on one thread, so many threads need them shared out), without it on the calling thread.
  // Without `buffers` the object allocates its own.
  PreparedActivations(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols,
                      ThreadPool* pool = nullptr, ActivationBuffers* buffers = nullptr);
  // Empty until prepare(): for objects kept between calls (matmul_batch's scratch).
  PreparedActivations() : b_(own_) {}
  PreparedActivations(const PreparedActivations&) = delete;
  PreparedActivations& operator=(const PreparedActivations&) = delete;

  // Converts another x, as the constructor does, into the same storage (which only grows).
  void prepare(GgmlType weight_type, const float* x, int64_t n_tokens, int64_t cols, ThreadPool* pool = nullptr);

  int64_t n_tokens() const { return n_tokens_; }
  int64_t cols() const { return cols_; }

  // Q4_0 / Q8_0 weights: the Q8_0 blocks of token t, as ggml lays them out and widened for the
  // SIMD kernels with the scales decoded to f32.
  const BlockQ8_0* q8_blocks(int64_t t) const { return b_.q8_blocks.data() + t * blocks_per_token(); }
  const WideQ8Block* wide_blocks(int64_t t) const { return b_.wide_blocks.data() + t * blocks_per_token(); }
  const float* q8_scales(int64_t t) const { return b_.q8_scales.data() + t * blocks_per_token(); }
  // The sum of each Q8_0 block's 32 quants: kernels that multiply Q4_0's stored nibbles (q + 8)
  // take 8 x this sum off to get the products with q.
  const int32_t* q8_sums(int64_t t) const { return b_.q8_sums.data() + t * blocks_per_token(); }
  // Q8_0 weights: per block, kQ8UnitOffsets values, value j being -128 x the sum of quants
  // 4j..4j+3: kernels that multiply Q8_0 weights read as unsigned bytes (w + 128, for VPDPBUSD)
  // start each four-quant sum from it to get the products with w.
  static constexpr int64_t kQ8UnitOffsets = kQuantBlock / 4;
  const int32_t* q8_unit_offsets(int64_t t) const {
    return b_.q8_unit_offsets.data() + t * blocks_per_token() * kQ8UnitOffsets;
  }

  // F16 / BF16 / F32 weights: the `cols` values of token t.
  const float* values(int64_t t) const { return values_ + t * cols_; }

 private:
  int64_t blocks_per_token() const { return cols_ / kQuantBlock; }
  // Converts tokens [begin, end) of x for `weight_type`, into storage already sized.
  void convert_tokens(GgmlType weight_type, const float* x, int64_t begin, int64_t end);

  int64_t n_tokens_ = 0;
  int64_t cols_ = 0;
  ActivationBuffers own_;  // used when the caller gives no buffers
  ActivationBuffers& b_;
  const float* values_ = nullptr;
};

}  // namespace channel::cpu
