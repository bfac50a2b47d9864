// Internals shared by the SIMD attention kernels (attention.cpp) and the scalar reference
// (attention_reference.cpp): llama.cpp's arithmetic primitives in scalar form, the geometry of
// cells, tiles and chunks, and the per-row reference routines the SIMD code falls back to on
// targets without fused multiply-add.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/attention.h"
#include "core/fused_multiply_add.h"

namespace channel::cpu::attention_detail {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// ggml_v_expf for AVX-512 (ggml-cpu vec.h, "adapted from arm limited optimized routine"): its
// constants, and the range beyond which it returns 0 or infinity.
inline constexpr float kExpShift = 0x1.8p23f;
inline constexpr float kExpLog2e = 0x1.715476p+0f;
inline constexpr float kExpLn2Hi = 0x1.62e4p-1f;
inline constexpr float kExpLn2Lo = 0x1.7f7d1cp-20f;
inline constexpr float kExpC1 = 0x1.ffffecp-1f;
inline constexpr float kExpC2 = 0x1.fffdb6p-2f;
inline constexpr float kExpC3 = 0x1.555e66p-3f;
inline constexpr float kExpC4 = 0x1.573e2ep-5f;
inline constexpr float kExpC5 = 0x1.0e4020p-7f;
inline constexpr float kExpMaxExponent = 192.0f;

// 2^k as a float, for -126 <= k <= 127.
inline float pow2(int k) { return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23); }

// j * 2^n rounded once, for |n| <= 192 and 0.5 < j < 2 (what vscalefps computes there): the
// first product is exact, the second rounds (to a subnormal or zero where it must).
inline float scale_by_pow2(float j, int n) {
  const int n1 = n >> 1;  // floor(n / 2)
  return (j * pow2(n1)) * pow2(n - n1);
}

// One lane of ggml_v_expf (AVX-512 build), bit for bit.
inline float expf_ggml(float x) {
  const float z = fused_multiply_add(x, kExpLog2e, kExpShift);
  const float n = z - kExpShift;
  const float b = fused_multiply_add(-n, kExpLn2Lo, fused_multiply_add(-n, kExpLn2Hi, x));
  const float u = b * b;
  const float high = fused_multiply_add(fused_multiply_add(kExpC5, b, kExpC4), u, fused_multiply_add(kExpC3, b, kExpC2));
  const float j = fused_multiply_add(high, u, fused_multiply_add(kExpC1, b, 1.0f));
  if (std::fabs(n) > kExpMaxExponent) return n <= 0.0f ? 0.0f : kInf;  // NaN n: infinity, as ggml
  return scale_by_pow2(j, static_cast<int>(n));
}

// _mm512_reduce_add_ps as GCC compiles it (halves added: 8, 4, 2, 1 lanes).
inline float reduce16(const float* x) {
  float a8[8], a4[4];
  for (int l = 0; l < 8; ++l) a8[l] = x[l] + x[l + 8];
  for (int l = 0; l < 4; ++l) a4[l] = a8[l] + a8[l + 4];
  return (a4[0] + a4[2]) + (a4[1] + a4[3]);
}

// a * b + c with the product rounded on its own (llama.cpp's S = S*ms + vs is compiled so):
// the volatile keeps a compiler from contracting it into a fused multiply-add.
inline float mul_then_add(float a, float b, float c) {
  volatile float product = a * b;
  return product + c;
}

inline bool visible(int32_t position, int32_t min_position, int32_t max_position) {
  return position >= 0 && position >= min_position && position <= max_position;
}

// Where the listed cells lie in llama.cpp's cell numbering.
struct Geometry {
  int64_t n_listed = 0;
  int64_t first_cell = 0;
  int64_t n_kv = 0;         // padded_kv_cells
  int64_t chunk_cells = 0;  // split-KV: cells per chunk
  int64_t n_chunks = 1;     // split-KV: chunks that hold cells (others are empty in llama.cpp)
  int group = 1;            // query heads per KV head

  explicit Geometry(const AttentionProblem& p);
  // Listed index of a cell, clamped to [0, n_listed].
  int64_t list_index(int64_t cell) const;
  int64_t chunk_begin(int64_t c) const { return list_index(c * chunk_cells); }
  int64_t chunk_end(int64_t c) const { return list_index((c + 1) * chunk_cells); }
  int64_t first_tile() const { return first_cell / kKvTileCells; }
  int64_t end_tile() const { return (first_cell + n_listed + kKvTileCells - 1) / kKvTileCells; }
};

// One query head's one-row result over a range of listed cells, before normalisation: maximum
// score, sum of weights and the f16 accumulator (as f32 values).
struct OneRowPartial {
  float m = -kInf;
  float s = 0.0f;
  float* vkq = nullptr;  // [head_dim]
};

// Scalar one-row scheme for query head h of token t over listed cells [begin, end).
void one_row_reference(const AttentionProblem& p, int64_t t, int h, int64_t begin, int64_t end, OneRowPartial& r);
// Scalar tiled scheme for query head h of token t; writes the output row.
void tiled_row_reference(const AttentionProblem& p, int64_t t, int h, float* out);
// llama.cpp's reduction of split-KV partials into the output row: partials[c * stride] is chunk
// c's, taken in chunk order.
void combine_partials(const OneRowPartial* partials, int64_t stride, int64_t n_chunks, int head_dim, float* out);
// out = vkq / s (0 when s is 0), as one_chunk finishes a row.
void finish_one_row(const OneRowPartial& r, int head_dim, float* out);

}  // namespace channel::cpu::attention_detail
