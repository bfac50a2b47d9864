// Scalar attention: llama.cpp's CPU flash-attention arithmetic spelled out one query head at a
// time. The SIMD kernels in attention.cpp must agree with it bit for bit.
#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/attention_detail.h"
#include "core/error.h"
#include "core/half.h"

namespace channel::cpu {
namespace attention_detail {
namespace {

float round_to_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// ggml_vec_dot_f16 (AVX-512, no AVX512-FP16): 4 accumulators of 16 lanes over steps of 64
// elements, summed (acc0 + acc2) + (acc1 + acc3) and reduced by reduce16; the elements after the
// last whole step are multiplied in f32 and added in double.
float dot_f16_ggml(const float* q16, const uint16_t* k, int n) {
  const int whole = n & ~63;
  float acc[4][16] = {};
  for (int i = 0; i < whole; i += 64) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 16; ++l) acc[j][l] = fused_multiply_add(q16[i + 16 * j + l], f16_to_f32(k[i + 16 * j + l]), acc[j][l]);
    }
  }
  float lanes[16];
  for (int l = 0; l < 16; ++l) lanes[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
  double sum = reduce16(lanes);
  for (int i = whole; i < n; ++i) sum += static_cast<double>(q16[i] * f16_to_f32(k[i]));
  return static_cast<float>(sum);
}

// simd_gemm's score: a fused multiply-add chain over the head dimensions from 0.
float dot_fma_chain(const float* q, const uint16_t* k, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc = fused_multiply_add(q[i], f16_to_f32(k[i]), acc);
  return acc;
}

}  // namespace

Geometry::Geometry(const AttentionProblem& p)
    : n_listed(static_cast<int64_t>(p.slots.size())),
      first_cell(p.first_cell),
      n_kv(padded_kv_cells(p)),
      group(p.n_head / p.n_head_kv) {
  const int64_t threads = std::max(1, p.kv_split_threads);
  chunk_cells = (n_kv + threads - 1) / threads;
  n_chunks = threads;
}

int64_t Geometry::list_index(int64_t cell) const { return std::clamp<int64_t>(cell - first_cell, 0, n_listed); }

void one_row_reference(const AttentionProblem& p, int64_t t, int h, int64_t begin, int64_t end, OneRowPartial& r) {
  const int d_head = p.head_dim;
  const int group = p.n_head / p.n_head_kv;
  const size_t kv_offset = static_cast<size_t>(h / group) * d_head;
  const float* q = p.q + (t * p.n_head + h) * d_head;
  std::vector<float> q16(d_head);
  for (int d = 0; d < d_head; ++d) q16[d] = round_to_f16(q[d]);
  float* vkq = r.vkq;
  std::fill(vkq, vkq + d_head, 0.0f);
  float m = -kInf, s = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t slot = p.slots[i];
    if (!visible(p.slot_positions[slot], p.min_position[t], p.max_position[t])) continue;
    const uint16_t* key = p.k + slot * p.kv_stride + kv_offset;
    const uint16_t* value = p.v + slot * p.kv_stride + kv_offset;
    const float score = dot_f16_ggml(q16.data(), key, d_head);
    float ms = 1.0f, vs = 1.0f;
    if (score > m) {  // new maximum: rescale what was accumulated (ggml_vec_scale_f16)
      ms = std::exp(m - score);
      m = score;
      for (int d = 0; d < d_head; ++d) vkq[d] = round_to_f16(vkq[d] * ms);
    } else {
      vs = std::exp(score - m);
    }
    for (int d = 0; d < d_head; ++d) vkq[d] = round_to_f16(fused_multiply_add(f16_to_f32(value[d]), vs, vkq[d]));  // ggml_vec_mad_f16
    s = mul_then_add(s, ms, vs);
  }
  r.m = m;
  r.s = s;
}

void tiled_row_reference(const AttentionProblem& p, int64_t t, int h, float* out) {
  const Geometry geo(p);
  const int d_head = p.head_dim;
  const size_t kv_offset = static_cast<size_t>(h / geo.group) * d_head;
  const float* q = p.q + (t * p.n_head + h) * d_head;
  std::vector<float> vkq(d_head, 0.0f);
  float m = -kInf, s = 0.0f;
  float scores[kKvTileCells], weights[kKvTileCells];
  for (int64_t tile = geo.first_tile(); tile < geo.end_tile(); ++tile) {
    float tile_max = -kInf;
    for (int64_t c = 0; c < kKvTileCells; ++c) {
      const int64_t i = tile * kKvTileCells + c - geo.first_cell;
      scores[c] = -kInf;  // masked, or a cell outside the listed ones
      if (i < 0 || i >= geo.n_listed) continue;
      const uint32_t slot = p.slots[i];
      if (!visible(p.slot_positions[slot], p.min_position[t], p.max_position[t])) continue;
      scores[c] = dot_fma_chain(q, p.k + slot * p.kv_stride + kv_offset, d_head);
      tile_max = std::max(tile_max, scores[c]);
    }
    if (tile_max == -kInf) continue;
    const float m_new = std::fmax(m, tile_max);
    if (m_new > m) {
      const float ms = std::exp(m - m_new);
      for (int d = 0; d < d_head; ++d) vkq[d] *= ms;
      s *= ms;
    }
    m = m_new;
    // ggml_vec_soft_max_f32: ggml_v_expf per element, each group of 16 reduced, summed in double.
    double sum = 0.0;
    for (int64_t c = 0; c < kKvTileCells; ++c) weights[c] = expf_ggml(scores[c] - m);
    for (int g = 0; g < kKvTileCells / 16; ++g) sum += static_cast<double>(reduce16(weights + 16 * g));
    s = static_cast<float>(static_cast<double>(s) + sum);
    // simd_gemm: a fused multiply-add chain over the tile's keys (masked ones add 0).
    for (int64_t c = 0; c < kKvTileCells; ++c) {
      if (scores[c] == -kInf) continue;
      const int64_t i = tile * kKvTileCells + c - geo.first_cell;
      const uint16_t* value = p.v + p.slots[i] * p.kv_stride + kv_offset;
      for (int d = 0; d < d_head; ++d) vkq[d] = fused_multiply_add(f16_to_f32(value[d]), weights[c], vkq[d]);
    }
  }
  const float inv = s == 0.0f ? 0.0f : 1.0f / s;
  for (int d = 0; d < d_head; ++d) out[d] = vkq[d] * inv;
}

void combine_partials(const OneRowPartial* partials, int64_t stride, int64_t n_chunks, int head_dim, float* out) {
  std::fill(out, out + head_dim, 0.0f);
  float m = -kInf, s = 0.0f;
  for (int64_t c = 0; c < n_chunks; ++c) {
    const OneRowPartial& r = partials[c * stride];
    if (r.s == 0.0f) continue;
    const float m_new = std::fmax(m, r.m);
    const float scale_old = std::exp(m - m_new);
    const float scale_new = std::exp(r.m - m_new);
    // As compiled in llama.cpp: the new chunk's product rounded, the old sum fused onto it.
    for (int d = 0; d < head_dim; ++d) {
      const float added = r.vkq[d] * scale_new;
      out[d] = fused_multiply_add(out[d], scale_old, added);
    }
    const float added = r.s * scale_new;
    s = fused_multiply_add(s, scale_old, added);
    m = m_new;
  }
  if (s != 0.0f) {
    const float inv = 1.0f / s;
    for (int d = 0; d < head_dim; ++d) out[d] *= inv;
  }
}

void finish_one_row(const OneRowPartial& r, int head_dim, float* out) {
  const float inv = r.s == 0.0f ? 0.0f : 1.0f / r.s;
  for (int d = 0; d < head_dim; ++d) out[d] = r.vkq[d] * inv;
}

}  // namespace attention_detail

using namespace attention_detail;

AttentionScheme attention_scheme(const AttentionProblem& p) {
  if (p.scheme != AttentionScheme::kAuto) return p.scheme;
  if (p.n_tokens >= kTiledMinQueries && p.head_dim % 16 == 0) return AttentionScheme::kTiled;
  if (p.n_tokens == 1 && padded_kv_cells(p) >= kSplitKvMinCells) return AttentionScheme::kSplitKv;
  return AttentionScheme::kOneRow;
}

int64_t padded_kv_cells(const AttentionProblem& p) {
  const int64_t used = p.first_cell + static_cast<int64_t>(p.slots.size());
  return std::max(kKvCellPadding, (used + kKvCellPadding - 1) / kKvCellPadding * kKvCellPadding);
}

void attend_reference(const AttentionProblem& p) {
  const Geometry geo(p);
  const int d_head = p.head_dim;
  const AttentionScheme scheme = attention_scheme(p);
  if (scheme == AttentionScheme::kTiled && d_head % 16 != 0) fail("tiled attention needs a head size multiple of 16");
  std::vector<float> accumulators(static_cast<size_t>(geo.n_chunks) * d_head);
  std::vector<OneRowPartial> partials(geo.n_chunks);
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int h = 0; h < p.n_head; ++h) {
      float* out = p.out + (t * p.n_head + h) * d_head;
      switch (scheme) {
        case AttentionScheme::kTiled:
          tiled_row_reference(p, t, h, out);
          break;
        case AttentionScheme::kSplitKv:
          for (int64_t c = 0; c < geo.n_chunks; ++c) {
            partials[c].vkq = accumulators.data() + c * d_head;
            one_row_reference(p, t, h, geo.chunk_begin(c), geo.chunk_end(c), partials[c]);
          }
          combine_partials(partials.data(), 1, geo.n_chunks, d_head, out);
          break;
        default:
          partials[0].vkq = accumulators.data();
          one_row_reference(p, t, h, 0, geo.n_listed, partials[0]);
          finish_one_row(partials[0], d_head, out);
          break;
      }
    }
  }
}

}  // namespace channel::cpu
