#version 460
// Attention of one query head of TOKENS consecutive tokens over the slots of the attention view,
// for batches of 64+ tokens (prefill; attention_rows.comp takes decode and smaller batches):
//   out = sum_j softmax_j(q . k_j) v_j   over listed slots j whose key position is in
//   [min_position(t), position(t)] (causal; on sliding layers also within the window).
// Queries are already scaled; keys and values are f16 in their physical slots, read through the
// view's slot list, so the ring never moves memory.
//
// The arithmetic is the CPU backend's tiled scheme (backend/cpu/attention_reference.cpp),
// llama.cpp's CPU flash attention for 64+ queries: f32 scores as a fused multiply-add chain,
// 64-cell tiles with an online maximum, weights by ggml's exp polynomial, f32 accumulation. Each
// token's chain of operations is that of one token alone, in the same order; the workgroup
// shares between its tokens only the loads: a tile's keys are read by neighbouring invocations
// (one key per TOKENS lanes), each value element once per invocation for all its tokens. One query
// head per workgroup was most of a prompt's time: every (token, head) read all its keys and
// values on its own.
//
// Workgroup index = token block * n_head + head. Per 64-cell tile:
//   1. scores of the TOKENS x 64 (token, cell) pairs, -inf where masked, into shared memory;
//   2. per token (invocation i < TOKENS takes token i): the tile's maximum, the new running
//      maximum and the factor that rescales what was accumulated (or the tile is skipped);
//   3. the weights (ggml's exp of score - maximum), a negative mark where a cell adds nothing;
//   4. per token its running sum, while every invocation rescales and accumulates the values of
//      its (dims, tokens): dim lane % D + k * size (D = min(head_dim, size)), tokens
//      lane / D + j * (size / D).
// Needs shaderFloat64 (sums in double, as the CPU). The output is f32, or (out_q != 0) the Q8_0
// activations of the wo product, quantized here (quantize_workgroup.glsl). 256 invocations.
// Specialization constants: 0 MAX_HEAD_DIM, 1 TOKENS.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 1) const uint TOKENS = 8;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"

const uint kTileCells = SHARED_ATTENTION_TILE_CELLS;
// A token's query row in vec4s, padded off the next one's banks: the score loop reads four dims
// a load (16 distinct rows a subgroup, 4 banks apart).
const uint kQueryStride = (MAX_HEAD_DIM + 3u) / 4u + 1u;
const uint kMaxDimsPerLane = (MAX_HEAD_DIM + 255u) / 256u;
const uint kPairs = (TOKENS * kTileCells + 255u) / 256u;  // (token, cell) pairs an invocation scores per tile
const uint kKeyLoadsAhead = 4;    // key loads (4 dims each) in flight per pair: 16 dims, a head's least
const uint kValueLoadsAhead = 4;  // cells whose values are loaded before the first is used

// Sized as shared_memory.glsl's SHARED_ATTENTION_WORDS, by which the host picks TOKENS.
shared vec4 query[SHARED_ATTENTION_QUERY(TOKENS, MAX_HEAD_DIM) / 4u];
// The tile's scores, then its weights (< 0: adds nothing), cell-major: cell c of token tq is
// element c * TOKENS + tq, so that an invocation reads a cell's weights for its tokens four a load.
shared vec4 tile[SHARED_ATTENTION_TILE(TOKENS) / 4u];
shared uint tile_slots[kTileCells];
shared float running_max[TOKENS], running_sum[TOKENS], rescale[TOKENS];
shared uint tile_live[TOKENS];  // 1: the token sees a key of the tile

float tile_value(uint cell, uint token) { const uint i = cell * TOKENS + token; return tile[i / 4u][i % 4u]; }
void set_tile_value(uint cell, uint token, float value) { const uint i = cell * TOKENS + token; tile[i / 4u][i % 4u] = value; }

// ggml_v_expf (AVX-512 build), bit for bit (attention_detail.h expf_ggml; constants by their bits)
// where the device fuses fma(): Vulkan lets fma() round its product apart, and lavapipe does, so
// there the results are within an ulp or so instead (VulkanAttention's bounds allow for it).
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

void main() {
  load_attention_step();
  const uint index = flat_workgroup_index();
  const uint n_blocks = (p.n_tokens + TOKENS - 1u) / TOKENS;
  if (index >= n_blocks * p.n_head) return;  // the whole workgroup
  const uint t0 = (index / p.n_head) * TOKENS, h = index % p.n_head;
  const uint lane = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
  const uint dim = p.head_dim;
  const uint kv_head = h / (p.n_head / p.n_head_kv);

  for (uint e = lane; e < TOKENS * dim; e += size) {
    const uint tq = e / dim, d = e % dim;
    query[tq * kQueryStride + d / 4u][d % 4u] = t0 + tq < p.n_tokens ? F32Ptr(p.q + (uint64_t(t0 + tq) * p.n_head * dim + h * dim) * 4u).v[d] : 0.0;
  }
  if (lane < TOKENS) {
    running_max[lane] = kMinusInfinity;
    running_sum[lane] = 0.0;
  }

  // This invocation's share of the accumulation: dims lane % dim_lanes + k * size, tokens
  // token_group + j * n_groups.
  const uint dim_lanes = min(dim, size);
  const uint n_groups = size / dim_lanes;
  const uint token_group = lane / dim_lanes;
  const uint first_dim = lane % dim_lanes;
  float out_values[kMaxDimsPerLane][TOKENS];
  [[unroll]] for (uint k = 0; k < kMaxDimsPerLane; ++k)
    [[unroll]] for (uint j = 0; j < TOKENS; ++j) out_values[k][j] = 0.0;

  // The tokens of this invocation's (token, cell) pairs are the same in every tile: their
  // positions and the lowest positions they see, read once.
  int pair_position[kPairs], pair_min_position[kPairs];
  [[unroll]] for (uint k = 0; k < kPairs; ++k) {
    const uint tq = (lane + k * 256u) % TOKENS;
    pair_position[k] = t0 + tq < p.n_tokens ? I32Ptr(p.positions).v[t0 + tq] : 0;
    pair_min_position[k] = min_visible_position(pair_position[k]);
  }

  const int first_tile = step.first_cell / int(kTileCells);
  const int end_tile = (step.first_cell + int(step.n_view) + int(kTileCells) - 1) / int(kTileCells);
  for (int tile_index = first_tile; tile_index < end_tile; ++tile_index) {
    const int base = tile_index * int(kTileCells) - step.first_cell;  // listed index of the tile's first cell
    barrier();  // the previous tile's weights are read (and, at the first, the queries written)
    // 1. Scores: pair e is cell e / TOKENS of token e % TOKENS, so that TOKENS neighbouring lanes
    // read one key. An invocation's pairs (lane + k * 256) run their chains side by side, each in
    // its own order; a masked pair runs on a stand-in row and its result is dropped.
    float score[kPairs];
    uint query_row[kPairs];
    uint64_t key[kPairs];
    bool visible[kPairs], any_visible = false;
    [[unroll]] for (uint k = 0; k < kPairs; ++k) {
      const uint e = lane + k * 256u;
      score[k] = 0.0;
      query_row[k] = 0u;
      key[k] = p.k_cache;
      visible[k] = false;
      if (e >= TOKENS * kTileCells) continue;
      const uint c = e / TOKENS, tq = e % TOKENS;
      const int i = base + int(c);
      if (i < 0 || i >= int(step.n_view) || t0 + tq >= p.n_tokens) continue;
      uint slot;
      visible[k] = visible_key(uint(i), pair_position[k], pair_min_position[k], slot);
      if (visible[k]) {
        query_row[k] = tq * kQueryStride;
        key[k] = p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u;
      }
      if (tq == 0u) tile_slots[c] = slot;
      any_visible = any_visible || visible[k];
    }
    if (any_visible) {
      // simd_gemm's score: a fused multiply-add chain over the head dims from 0, the key read four
      // dims a load (a head is a multiple of 16 dims, its rows 32-byte aligned). The loads of
      // kKeyLoadsAhead steps are issued before their arithmetic, so that a step's chain does not
      // wait on its own load (one load latency per 4 dims left the kernel waiting on memory).
      for (uint d0 = 0; d0 < dim; d0 += 4u * kKeyLoadsAhead) {
        uvec2 key_words[kKeyLoadsAhead][kPairs];  // f16 pairs: dims 4a .. 4a + 3 of the 16
        [[unroll]] for (uint a = 0; a < kKeyLoadsAhead; ++a)
          [[unroll]] for (uint k = 0; k < kPairs; ++k) key_words[a][k] = U32x2Ptr(key[k]).v[d0 / 4u + a];
        [[unroll]] for (uint a = 0; a < kKeyLoadsAhead; ++a) {
          const uint d = d0 + 4u * a;
          vec4 queries[kPairs], keys[kPairs];
          [[unroll]] for (uint k = 0; k < kPairs; ++k) {
            queries[k] = query[query_row[k] + d / 4u];
            keys[k] = vec4(unpackHalf2x16(key_words[a][k].x), unpackHalf2x16(key_words[a][k].y));
          }
          [[unroll]] for (uint i = 0; i < 4u; ++i) {
            [[unroll]] for (uint k = 0; k < kPairs; ++k) score[k] = fma(queries[k][i], keys[k][i], score[k]);
          }
        }
      }
    }
    [[unroll]] for (uint k = 0; k < kPairs; ++k) {
      const uint e = lane + k * 256u;
      if (e < TOKENS * kTileCells) set_tile_value(e / TOKENS, e % TOKENS, visible[k] ? score[k] : kMinusInfinity);
    }
    barrier();
    // 2. Each token's maximum.
    if (lane < TOKENS) {
      float tile_max = kMinusInfinity;
      for (uint c = 0; c < kTileCells; ++c) tile_max = max(tile_max, tile_value(c, lane));
      const float m = running_max[lane];
      const float m_new = max(m, tile_max);
      tile_live[lane] = tile_max != kMinusInfinity ? 1u : 0u;
      rescale[lane] = 1.0;
      if (tile_max != kMinusInfinity && m_new > m) {
        const float ms = exp(m - m_new);
        rescale[lane] = ms;
        running_sum[lane] *= ms;
      }
      if (tile_max != kMinusInfinity) running_max[lane] = m_new;
    }
    barrier();
    // A tile that none of the block's tokens sees adds nothing (every token would skip it alone):
    // its weights and values are not touched. (Uniform: every invocation reads the same flags.)
    bool any_live = false;
    for (uint tq = 0; tq < TOKENS; ++tq) any_live = any_live || tile_live[tq] != 0u;
    if (!any_live) continue;
    // 3. The weights, each formed once; -1 marks a cell out of the list or masked (the running
    // sum counts it as 0, as ggml's weight of a masked cell).
    for (uint e = lane; e < TOKENS * kTileCells; e += size) {
      const uint c = e / TOKENS, tq = e % TOKENS;
      const float score = tile_value(c, tq);
      set_tile_value(c, tq, tile_live[tq] != 0u && score != kMinusInfinity ? expf_ggml(score - running_max[tq]) : -1.0);
    }
    barrier();
    // 4. ggml_vec_soft_max_f32's sum: each group of 16 weights reduced, the groups summed in double.
    if (lane < TOKENS && tile_live[lane] != 0u) {
      double sum = 0.0;
      for (uint g = 0; g < kTileCells / 16u; ++g) {
        float group[16];
        for (uint l = 0; l < 16; ++l) group[l] = max(tile_value(16u * g + l, lane), 0.0);
        sum += double(reduce16(group));
      }
      running_sum[lane] = float(double(running_sum[lane]) + sum);
    }
    if (token_group < n_groups) {
      [[unroll]] for (uint j = 0; j < TOKENS; ++j) {
        const uint tq = token_group + j * n_groups;
        if (tq >= TOKENS) break;
        const float ms = rescale[tq];
        [[unroll]] for (uint k = 0; k < kMaxDimsPerLane; ++k) out_values[k][j] *= ms;
      }
      // The values of kValueLoadsAhead cells are loaded before any is used (a cell in the list
      // that none of this invocation's tokens sees is loaded too, and not used); each token's
      // accumulator still takes the cells in order.
      for (uint c0 = 0; c0 < kTileCells; c0 += kValueLoadsAhead) {
        float values[kValueLoadsAhead][kMaxDimsPerLane];
        [[unroll]] for (uint a = 0; a < kValueLoadsAhead; ++a) {
          const int i = base + int(c0 + a);
          const bool listed = i >= 0 && i < int(step.n_view);
          const uint64_t row = p.v_cache + uint64_t(listed ? kv_row_offset(tile_slots[c0 + a], kv_head) : 0u) * 2u;
          [[unroll]] for (uint k = 0; k < kMaxDimsPerLane; ++k) {
            const uint d = first_dim + k * size;
            values[a][k] = listed && d < dim ? float(F16Ptr(row).v[d]) : 0.0;
          }
        }
        [[unroll]] for (uint a = 0; a < kValueLoadsAhead; ++a) {
          const uint c = c0 + a;
          const int i = base + int(c);
          if (i < 0 || i >= int(step.n_view)) continue;
          // This invocation's tokens' weights of the cell (< 0: the token does not see it).
          float weights[TOKENS];
          if (n_groups == 1u && TOKENS % 4u == 0u) {  // tokens 0 .. TOKENS - 1: whole vec4s of the cell
            [[unroll]] for (uint j = 0; j < TOKENS; j += 4u) {
              const vec4 four = tile[(c * TOKENS + j) / 4u];
              [[unroll]] for (uint i = 0; i < 4u; ++i) weights[j + i] = four[i];
            }
          } else {
            [[unroll]] for (uint j = 0; j < TOKENS; ++j) {
              const uint tq = token_group + j * n_groups;
              weights[j] = tq < TOKENS ? tile_value(c, tq) : -1.0;
            }
          }
          [[unroll]] for (uint k = 0; k < kMaxDimsPerLane; ++k) {
            if (first_dim + k * size >= dim) break;
            [[unroll]] for (uint j = 0; j < TOKENS; ++j) {
              if (weights[j] >= 0.0) out_values[k][j] = fma(values[a][k], weights[j], out_values[k][j]);
            }
          }
        }
      }
    }
  }
  barrier();  // the running sums are final

  for (uint tq = 0; tq < TOKENS && t0 + tq < p.n_tokens; ++tq) {
    const float s = running_sum[tq];
    const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
    const uint64_t first = uint64_t(t0 + tq) * p.n_head * dim + h * dim;  // the head's first output value
    if (token_group < n_groups) {
      [[unroll]] for (uint j = 0; j < TOKENS; ++j) {
        if (token_group + j * n_groups != tq) continue;
        [[unroll]] for (uint k = 0; k < kMaxDimsPerLane; ++k) {
          const uint d = first_dim + k * size;
          if (d >= dim) break;
          if (p.out_q != 0ul) {
            quantize_values[d] = out_values[k][j] * inverse;
          } else {
            F32Ptr(p.dst + (first + d) * 4u).v[0] = out_values[k][j] * inverse;
          }
        }
      }
    }
    if (p.out_q != 0ul) {  // the Q8_0 activations of wo (head_dim a multiple of 32: whole blocks)
      quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
      barrier();  // quantize_values is free for the next token
    }
  }
}
