// Matrix-vector and matrix-matrix products of GGUF weights with f32 activations.
//
// Numerics follow llama.cpp's CPU backend so logits agree closely: for Q4_0 and Q8_0 weights
// the activations are first quantized per 32-block to Q8_0 and the block dot products are
// integer sums scaled by d_w * d_x; for F16 (BF16) weights the activations are rounded to F16
// (BF16) and the products accumulate in f32; F32 weights use plain f32 dot products.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/thread_pool.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::cpu {

using channel::WeightMatrix;  // defined with the model: the view of a GGUF weight tensor

// out[t * w.rows + r] = dot(row r of w, x + t * w.cols) for t < n_tokens, r < w.rows.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* out, ThreadPool& pool);

// Same for a subset of rows: out[t * rows.size() + i] = dot(row rows[i] of w, token t).
// Used for output-projection candidates (probes) without touching the other rows.
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, std::span<const int32_t> rows,
                 float* out, ThreadPool& pool);

// Converts row `row` of w to f32 (embedding lookup).
void dequantize_row(const WeightMatrix& w, int64_t row, float* out);

}  // namespace channel::cpu
