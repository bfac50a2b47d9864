#version 460
// Attention of one query head of one token over the slots of the attention view, for batches of
// 64+ tokens (prefill; attention_rows.comp takes decode and smaller batches):
//   out = sum_j softmax_j(q . k_j) v_j   over listed slots j whose key position is in
//   [min_position(t), position(t)] (causal; on sliding layers also within the window).
// Queries are already scaled; keys and values are f16 in their physical slots, read through the
// view's slot list, so the ring never moves memory.
//
// The arithmetic is the CPU backend's tiled scheme (backend/cpu/attention_reference.cpp),
// llama.cpp's CPU flash attention for 64+ queries: f32 scores as a fused multiply-add chain,
// 64-cell tiles with an online maximum, weights by ggml's exp polynomial, f32 accumulation.
// One workgroup per (token, head): workgroup index = t * n_head + h. Each invocation scores
// whole keys into shared memory (MAX_KEYS of them), then owns output dims and walks the tiles
// (every invocation keeps the same running maximum and sum; a tile's 64 weights are formed by the
// first 64 invocations, so the workgroup has at least 64). Needs shaderFloat64 (sums in double,
// as the CPU). The output is f32, or (out_q != 0) the Q8_0 activations of the wo product,
// quantized here (quantize_workgroup.glsl). Specialization constants: 0 workgroup size,
// 1 MAX_SUBGROUPS, 2 MAX_HEAD_DIM, 3 MAX_KEYS.
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 3) const uint MAX_KEYS = 4224;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"

shared float query[MAX_HEAD_DIM];
shared float scores[MAX_KEYS];
shared float tile_weights[64];  // kTileCells

const uint kTileCells = 64;
const uint kMaxDimsPerLane = (MAX_HEAD_DIM + 31) / 32;  // the workgroup has at least 32 invocations

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
  return p.v_cache + uint64_t(kv_row_offset(U32Ptr(p.view).v[j], kv_head)) * 2u;
}

void main() {
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * p.n_head) return;  // the whole workgroup
  const uint t = index / p.n_head, h = index % p.n_head;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = p.head_dim;
  const uint kv_head = h / (p.n_head / p.n_head_kv);
  const int position = I32Ptr(p.positions).v[t];
  const int min_position = min_visible_position(position);

  F32Ptr q = F32Ptr(p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint d = lane; d < dim; d += stride) query[d] = q.v[d];
  barrier();

  // Scores of the listed keys (-inf when masked), one key per invocation.
  for (uint j = lane; j < p.n_view; j += stride) {
    uint slot;
    float score = kMinusInfinity;
    if (visible_key(j, position, min_position, slot)) {
      score = dot_fma_chain(F16Ptr(p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u), dim);
    }
    scores[j] = score;
  }
  barrier();

  float out_values[kMaxDimsPerLane];
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
    // The tile's weights, each formed once (invocation c forms cell c's) and shared: every
    // invocation forming all of them twice was most of a long prefill's attention.
    barrier();  // the previous tile's weights are read
    if (lane < kTileCells) {
      const int i = base + int(lane);
      tile_weights[lane] = i >= 0 && i < int(p.n_view) ? expf_ggml(scores[i] - m) : 0.0;
    }
    barrier();
    // ggml_vec_soft_max_f32: each group of 16 weights reduced, the groups summed in double.
    double sum = 0.0;
    for (uint g = 0; g < kTileCells / 16u; ++g) {
      float group[16];
      for (uint l = 0; l < 16; ++l) group[l] = tile_weights[16u * g + l];
      sum += double(reduce16(group));
    }
    s = float(double(s) + sum);
    for (int c = 0; c < int(kTileCells); ++c) {
      const int i = base + c;
      if (i < 0 || i >= int(p.n_view) || scores[i] == kMinusInfinity) continue;
      const float weight = tile_weights[c];
      F16Ptr value = F16Ptr(value_address(uint(i), kv_head));
      for (uint k = 0, d = lane; d < dim; ++k, d += stride) out_values[k] = fma(float(value.v[d]), weight, out_values[k]);
    }
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);

  const uint64_t first = uint64_t(t) * p.n_head * dim + h * dim;  // the head's first output value
  if (p.out_q != 0ul) {  // the Q8_0 activations of wo (head_dim a multiple of 32: whole blocks)
    for (uint k = 0, d = lane; d < dim; ++k, d += stride) quantize_values[d] = out_values[k] * inverse;
    quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  F32Ptr dst = F32Ptr(p.dst + first * 4u);
  for (uint k = 0, d = lane; d < dim; ++k, d += stride) dst.v[d] = out_values[k] * inverse;
}
