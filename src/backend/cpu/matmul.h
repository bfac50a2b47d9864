// Matrix-vector and matrix-matrix products of GGUF weights with f32 activations.
//
// Numerics follow llama.cpp's CPU backend so logits agree closely: for Q4_0 and Q8_0 weights
// the activations are first quantized per 32-block to Q8_0 and the block dot products are
// integer sums scaled by d_w * d_x; for F16 (BF16) weights the activations are rounded to F16
// (BF16) and the products accumulate in f32; F32 weights use plain f32 dot products.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::cpu {

using channel::WeightMatrix;  // defined with the model: the view of a GGUF weight tensor
struct ActivationBuffers;      // activations.h

// out[t * w.rows + r] = dot(row r of w, x + t * w.cols) for t < n_tokens, r < w.rows. The
// activations are converted into `buffers` when given (a caller's, reused: no allocation), else
// into storage of the call's own.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* out, ThreadPool& pool,
            ActivationBuffers* buffers = nullptr);

// Same for a subset of rows: out[t * rows.size() + i] = dot(row rows[i] of w, token t).
// Used for output-projection candidates (probes) without touching the other rows.
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, std::span<const int32_t> rows,
                 float* out, ThreadPool& pool, ActivationBuffers* buffers = nullptr);

// One of several independent products run together by matmul_batch: out[t * out_stride + r] =
// dot(row r of w, x + t * w.cols) for t < n_tokens, r < w.rows.
struct MatmulProduct {
  WeightMatrix w;
  const float* x = nullptr;
  int64_t n_tokens = 0;
  float* out = nullptr;
  int64_t out_stride = 0;
};

struct DotRowsJob;  // dot_kernels.h
class PreparedActivations;
// matmul_batch's working storage: the products' activations and jobs.
struct MatmulBatchScratch {
  MatmulBatchScratch();
  ~MatmulBatchScratch();
  std::vector<std::unique_ptr<PreparedActivations>> activations;  // one per distinct input, reused
  std::vector<const MatmulProduct*> inputs;  // the product whose input activations[i] holds
  std::vector<DotRowsJob> jobs;
  struct RowRange {
    size_t job;
    int64_t begin, end;
  };
  std::vector<RowRange> ranges;
};

// The accumulation order of a batch's products: ggml's mul_mat (matmul's: a layer's Q, K and V,
// or gate and up) or its mul_mat_id (the experts of an MoE layer), which computes every expert
// with the vec_dot kernels (BF16 too, where mul_mat follows tinyBLAS for 2+ tokens) and Q4_0
// experts repacked as matmul's Q4_0 matrices.
enum class ProductOrder { kMulMat, kMulMatId };

// Runs independent products (a layer's projections of one input; the experts of an MoE layer,
// each over its own tokens) as one parallel_for over all their row tiles, so that the threads
// share the whole set instead of meeting at a barrier after each product. Products of the same
// input (x, tokens, columns and weight type) share its conversion. `scratch` keeps the storage of
// the products' activations and jobs from one call to the next (it only grows), so that a decode
// step allocates nothing.
void matmul_batch(std::span<const MatmulProduct> products, ProductOrder order, ThreadPool& pool,
                  MatmulBatchScratch& scratch);

// Converts row `row` of w to f32 (embedding lookup).
void dequantize_row(const WeightMatrix& w, int64_t row, float* out);

}  // namespace channel::cpu
