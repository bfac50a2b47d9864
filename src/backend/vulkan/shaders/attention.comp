#version 460
// Attention of one query head of one token over the slots of the attention view:
//   out = sum_j softmax_j(q . k_j) v_j   over listed slots j whose key position is in
//   [min_position(t), position(t)] (causal; on sliding layers also within the window).
// Queries are already scaled (attention scale 1.0 here). Keys and values are f16 in their
// physical slots; the view is a list of slots, so the ring never moves memory.
//
// The arithmetic is the CPU backend's (backend/cpu/attention_reference.cpp), which is llama.cpp's
// CPU flash attention step for step, so that the GPU's logits stay as close to the peer as the
// CPU's (quantized models amplify any difference through their int8 activations):
//   scheme 0, one-row (fewer than 64 tokens): query rounded to f16, scores as ggml_vec_dot_f16,
//     weighted values accumulated in f16 with an online softmax over the keys in view order;
//   scheme 1, split-KV (one token, 512+ cells): the one-row scheme on n_chunks chunks of
//     llama.cpp's cells, one workgroup per (head, chunk), each writing its partial maximum, sum
//     and accumulators; attention_combine.comp merges them as llama.cpp does;
//   scheme 2, tiled (64+ tokens): f32 scores as a fused multiply-add chain, 64-cell tiles with an
//     online maximum, weights by ggml's exp polynomial, f32 accumulation.
// One workgroup per (token, head): workgroup index = t * n_head + h (scheme 1: (h, chunk) =
// (index / n_chunks, index % n_chunks)). Each invocation scores whole
// keys into shared memory (MAX_KEYS of them), then owns output dims and walks the keys (every
// invocation keeps the same running maximum and sum). Needs shaderFloat64 (sums in double, as
// the CPU). Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS, 2 MAX_HEAD_DIM,
// 3 MAX_KEYS.
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 3) const uint MAX_KEYS = 4224;

layout(push_constant, std430) uniform AttentionParams {
  uint64_t q;               // f32 [n_tokens][n_head * head_dim]
  uint64_t k_cache;         // f16 [slots][n_head_kv * head_dim]
  uint64_t v_cache;
  uint64_t view;            // uint32 [n_view]: slots to read, chronological
  uint64_t slot_positions;  // int32 per physical slot: RoPE position of its key, -1 if empty
  uint64_t positions;       // int32 per token
  uint64_t dst;             // f32 [n_tokens][n_head * head_dim]
  uint n_view;
  uint head_dim;
  uint n_head;
  uint n_head_kv;
  int sliding_window;       // 0: global layer
  uint n_tokens;
  uint scheme;              // 0 one-row, 1 split-KV, 2 tiled
  int first_cell;           // llama.cpp's cell of the first listed key (its position on a fresh stream)
  uint n_chunks;            // split-KV: chunks (llama.cpp's thread count)
  uint chunk_cells;         // split-KV: cells per chunk
  uint64_t partials;        // split-KV: f32 [n_head][n_chunks][2 + head_dim]: m, s, accumulators
} p;

shared float query[MAX_HEAD_DIM];
shared float scores[MAX_KEYS];

#define kMinusInfinity uintBitsToFloat(0xff800000u)
const uint kTileCells = 64;
const uint kMaxDimsPerLane = (MAX_HEAD_DIM + 31) / 32;  // the workgroup has at least 32 invocations

float round_to_f16(float x) { return f16_bits_to_f32(f32_to_f16_bits(x)); }

// _mm512_reduce_add_ps as GCC compiles it: halves added, 8, 4, 2, 1 lanes.
float reduce16(float x[16]) {
  float a8[8], a4[4];
  for (uint l = 0; l < 8; ++l) a8[l] = x[l] + x[l + 8];
  for (uint l = 0; l < 4; ++l) a4[l] = a8[l] + a8[l + 4];
  precise float r = (a4[0] + a4[2]) + (a4[1] + a4[3]);
  return r;
}

// ggml_vec_dot_f16 (AVX-512): 4 accumulators of 16 lanes over steps of 64 elements, summed
// (acc0 + acc2) + (acc1 + acc3), reduced, the tail added in double.
float dot_f16_ggml(F16Ptr key, uint n) {
  const uint whole = n & ~63u;
  float acc[4][16];
  for (uint j = 0; j < 4; ++j)
    for (uint l = 0; l < 16; ++l) acc[j][l] = 0.0;
  for (uint i = 0; i < whole; i += 64u) {
    for (uint j = 0; j < 4; ++j)
      for (uint l = 0; l < 16; ++l) acc[j][l] = fma(query[i + 16u * j + l], float(key.v[i + 16u * j + l]), acc[j][l]);
  }
  float lanes[16];
  for (uint l = 0; l < 16; ++l) {
    precise float lane = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    lanes[l] = lane;
  }
  double sum = double(reduce16(lanes));
  for (uint i = whole; i < n; ++i) {
    precise float product = query[i] * float(key.v[i]);
    sum += double(product);
  }
  return float(sum);
}

// simd_gemm's score: a fused multiply-add chain over the head dims from 0.
float dot_fma_chain(F16Ptr key, uint n) {
  float acc = 0.0;
  for (uint i = 0; i < n; ++i) acc = fma(query[i], float(key.v[i]), acc);
  return acc;
}

// ggml_v_expf (AVX-512 build), bit for bit (attention_detail.h expf_ggml; constants by their bits).
float expf_ggml(float x) {
  const float shift = uintBitsToFloat(0x4b400000u);  // 0x1.8p23
  const float log2e = uintBitsToFloat(0x3fb8aa3bu), ln2_hi = uintBitsToFloat(0x3f317200u), ln2_lo = uintBitsToFloat(0x35bfbe8eu);
  const float c1 = uintBitsToFloat(0x3f7ffff6u), c2 = uintBitsToFloat(0x3efffedbu), c3 = uintBitsToFloat(0x3e2aaf33u);
  const float c4 = uintBitsToFloat(0x3d2b9f17u), c5 = uintBitsToFloat(0x3c072010u);
  const float z = fma(x, log2e, shift);
  precise float n = z - shift;
  const float r = fma(-n, ln2_lo, fma(-n, ln2_hi, x));
  precise float u = r * r;
  const float j = fma(fma(fma(c5, r, c4), u, fma(c3, r, c2)), u, fma(c1, r, 1.0));
  if (isnan(n)) return uintBitsToFloat(0x7f800000u);  // as ggml
  if (abs(n) > 192.0) return n <= 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  // j * 2^n rounded once: the first product is exact, the second rounds.
  const int e = int(n), e1 = e >> 1;
  precise float scaled = (j * uintBitsToFloat(uint(e1 + 127) << 23)) * uintBitsToFloat(uint(e - e1 + 127) << 23);
  return scaled;
}

uint64_t value_address(uint j, uint kv_head) {
  const uint slot = U32Ptr(p.view).v[j];
  return p.v_cache + (uint64_t(slot) * p.n_head_kv * p.head_dim + kv_head * p.head_dim) * 2u;
}

// The one-row scheme over listed keys [begin, end) (their scores at scores[j - begin]): running
// maximum m, sum s and the f16 accumulators of this invocation's dims (lane, lane + stride, ...).
void one_row(uint begin, uint end, uint kv_head, inout float m, inout float s, inout float acc[kMaxDimsPerLane]) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  for (uint k = 0; k < kMaxDimsPerLane; ++k) acc[k] = 0.0;
  m = kMinusInfinity;
  s = 0.0;
  for (uint j = begin; j < end; ++j) {
    const float score = scores[j - begin];
    if (score == kMinusInfinity) continue;
    float ms = 1.0, vs = 1.0;
    if (score > m) {  // a new maximum: rescale what was accumulated (ggml_vec_scale_f16)
      ms = exp(m - score);
      m = score;
      for (uint k = 0; k < kMaxDimsPerLane; ++k) acc[k] = round_to_f16(acc[k] * ms);
    } else {
      vs = exp(score - m);
    }
    F16Ptr value = F16Ptr(value_address(j, kv_head));
    for (uint k = 0, d = lane; d < dim; ++k, d += stride) acc[k] = round_to_f16(fma(float(value.v[d]), vs, acc[k]));
    precise float scaled = s * ms;  // S = S*ms + vs, the product rounded on its own
    s = scaled + vs;
  }
}

uint list_index(int cell) { return uint(clamp(cell - p.first_cell, 0, int(p.n_view))); }

void main() {
  const bool split = p.scheme == 1u;
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * p.n_head * (split ? p.n_chunks : 1u)) return;  // the whole workgroup
  const uint head_index = split ? index / p.n_chunks : index, chunk = split ? index % p.n_chunks : 0u;
  const uint t = head_index / p.n_head, h = head_index % p.n_head;
  // The listed keys this workgroup reads: its chunk of llama.cpp's cells, or all of them.
  const uint begin = split ? list_index(int(chunk * p.chunk_cells)) : 0u;
  const uint end = split ? list_index(int((chunk + 1u) * p.chunk_cells)) : p.n_view;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = p.head_dim;
  const uint kv_head = h / (p.n_head / p.n_head_kv);
  const uint kv_stride = p.n_head_kv * dim;
  const int position = I32Ptr(p.positions).v[t];
  const int min_position = p.sliding_window > 0 ? position - p.sliding_window + 1 : 0;
  const bool f16_query = p.scheme != 2u;

  F32Ptr q = F32Ptr(p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint d = lane; d < dim; d += stride) query[d] = f16_query ? round_to_f16(q.v[d]) : q.v[d];
  barrier();

  // Scores of the listed keys (-inf when masked), one key per invocation.
  U32Ptr view = U32Ptr(p.view);
  I32Ptr slot_positions = I32Ptr(p.slot_positions);
  for (uint j = begin + lane; j < end; j += stride) {
    const uint slot = view.v[j];
    const int key_position = slot_positions.v[slot];
    const bool visible = key_position >= 0 && key_position >= min_position && key_position <= position;
    float score = kMinusInfinity;
    if (visible) {
      F16Ptr key = F16Ptr(p.k_cache + (uint64_t(slot) * kv_stride + kv_head * dim) * 2u);
      score = f16_query ? dot_f16_ggml(key, dim) : dot_fma_chain(key, dim);
    }
    scores[j - begin] = score;
  }
  barrier();

  float out_values[kMaxDimsPerLane];
  float inverse = 0.0;
  if (p.scheme == 0u) {
    float m, s;
    one_row(0u, p.n_view, kv_head, m, s, out_values);
    inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  } else if (split) {
    float m, s;
    one_row(begin, end, kv_head, m, s, out_values);
    F32Ptr partial = F32Ptr(p.partials + uint64_t(index) * (2u + dim) * 4u);
    if (lane == 0u) {
      partial.v[0] = m;
      partial.v[1] = s;
    }
    for (uint k = 0, d = lane; d < dim; ++k, d += stride) partial.v[2u + d] = out_values[k];
    return;
  } else {
    for (uint k = 0; k < kMaxDimsPerLane; ++k) out_values[k] = 0.0;
    float m = kMinusInfinity, s = 0.0;
    const int first_tile = p.first_cell / int(kTileCells);
    const int end_tile = (p.first_cell + int(p.n_view) + int(kTileCells) - 1) / int(kTileCells);
    for (int tile = first_tile; tile < end_tile; ++tile) {
      const int base = tile * int(kTileCells) - p.first_cell;  // listed index of the tile's first cell
      float tile_max = kMinusInfinity;
      for (int c = 0; c < int(kTileCells); ++c) {
        const int i = base + c;
        if (i >= 0 && i < int(p.n_view)) tile_max = max(tile_max, scores[i]);
      }
      if (tile_max == kMinusInfinity) continue;
      const float m_new = max(m, tile_max);
      if (m_new > m) {
        const float ms = exp(m - m_new);
        for (uint k = 0; k < kMaxDimsPerLane; ++k) out_values[k] *= ms;
        s *= ms;
      }
      m = m_new;
      // ggml_vec_soft_max_f32: each group of 16 weights reduced, the groups summed in double.
      double sum = 0.0;
      for (uint g = 0; g < kTileCells / 16u; ++g) {
        float group[16];
        for (uint l = 0; l < 16; ++l) {
          const int i = base + int(16u * g + l);
          group[l] = i >= 0 && i < int(p.n_view) ? expf_ggml(scores[i] - m) : 0.0;
        }
        sum += double(reduce16(group));
      }
      s = float(double(s) + sum);
      for (int c = 0; c < int(kTileCells); ++c) {
        const int i = base + c;
        if (i < 0 || i >= int(p.n_view) || scores[i] == kMinusInfinity) continue;
        const float weight = expf_ggml(scores[i] - m);
        F16Ptr value = F16Ptr(value_address(uint(i), kv_head));
        for (uint k = 0, d = lane; d < dim; ++k, d += stride) out_values[k] = fma(float(value.v[d]), weight, out_values[k]);
      }
    }
    inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  }

  F32Ptr dst = F32Ptr(p.dst + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint k = 0, d = lane; d < dim; ++k, d += stride) dst.v[d] = out_values[k] * inverse;
}
