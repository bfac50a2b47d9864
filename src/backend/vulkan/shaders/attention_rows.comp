#version 460
// Attention of one query head of one token over the slots of the attention view, for decode and
// batches of fewer than 64 tokens (attention.comp tiles larger ones):
//   out = sum_j softmax_j(q . k_j) v_j   over listed slots j whose key position is in
//   [min_position(t), position(t)] (causal; on sliding layers also within the window).
// Queries are already scaled; keys and values are f16 in their physical slots, read through the
// view's slot list, so the ring never moves memory.
//
// The arithmetic is llama.cpp's CPU flash attention step for step, as the CPU backend's
// (backend/cpu/attention_reference.cpp), so that the GPU's logits stay as close to the peer as
// the CPU's (quantized models amplify any difference through their int8 activations):
//   scheme 0, one-row: query rounded to f16, scores as ggml_vec_dot_f16, weighted values
//     accumulated in f16 with an online softmax over the keys in view order;
//   scheme 1, split-KV (one token, 512+ cells): the one-row scheme on each of n_chunks chunks of
//     llama.cpp's cells, one workgroup per (head, chunk), each writing its partial maximum, sum
//     and accumulators; attention_combine.comp merges them as llama.cpp does.
// The work is spread without changing that arithmetic, in tiles of keys whose values fit the
// shared memory, so that each tile costs a few memory round trips however long the chain is:
//   1. one invocation per key reads its slot and whether the token sees it;
//   2. the workgroup loads the tile's values into shared memory (consecutive invocations reading
//      consecutive words) while each invocation forms the score of its own key: ggml_vec_dot_f16's
//      64 partial sums (AVX-512: 4 accumulators of 16 lanes, each a fused multiply-add chain over
//      steps of 64 elements) in its registers, added in ggml's order (and the elements past the
//      last whole step, in double);
//   3. every invocation runs the online softmax over the tile's keys in order for its own pairs of
//      output dims, reading the values from shared memory.
// Workgroup index = t * n_head + h (scheme 1: (h, chunk) = (index / n_chunks, index % n_chunks)).
// 128 invocations. Needs shaderFloat64 (sums in double, as the CPU). Specialization constants:
// 0 MAX_HEAD_DIM (even), 1 VALUE_WORDS (shared words for a tile's values: the device's shared
// memory decides the tile size).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 1) const uint VALUE_WORDS = 4096;

const uint kMaxTile = 128;     // keys per tile at most: one per invocation
const uint kSlotSums = 64;     // ggml_vec_dot_f16's partial sums: 4 accumulators x 16 lanes
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + 127u) / 128u;

shared float query[MAX_HEAD_DIM];
shared uint tile_slots[kMaxTile];
shared bool tile_visible[kMaxTile];
shared float tile_scores[kMaxTile];  // -inf: the token does not see the key
shared uint tile_values[VALUE_WORDS];  // f16 pairs: key k's dims 2w, 2w + 1 in word k * pairs + w

uint list_index(int cell) { return uint(clamp(cell - p.first_cell, 0, int(p.n_view))); }

// Keys per tile: as many as one per invocation, or as the shared values allow.
uint tile_capacity() { return min(kMaxTile, VALUE_WORDS / (p.head_dim / 2u)); }

// ggml_vec_dot_f16(query rounded to f16, key) for the key in `slot`.
float key_score(uint slot, uint kv_head) {
  const uint dim = p.head_dim, whole = dim & ~63u;
  U32Ptr key = U32Ptr(p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u);
  float acc[kSlotSums];
  [[unroll]] for (uint s = 0; s < kSlotSums; ++s) acc[s] = 0.0;
  for (uint i = 0; i < whole; i += 64u) {
    [[unroll]] for (uint w = 0; w < kSlotSums / 2u; ++w) {
      const vec2 k = unpackHalf2x16(key.v[i / 2u + w]);
      acc[2u * w] = fma(query[i + 2u * w], k.x, acc[2u * w]);
      acc[2u * w + 1u] = fma(query[i + 2u * w + 1u], k.y, acc[2u * w + 1u]);
    }
  }
  float lanes[16];
  [[unroll]] for (uint l = 0; l < 16; ++l) {
    precise float sum = (acc[l] + acc[l + 32u]) + (acc[l + 16u] + acc[l + 48u]);
    lanes[l] = sum;
  }
  double sum = double(reduce16(lanes));
  for (uint i = whole; i < dim; i += 2u) {
    const vec2 k = unpackHalf2x16(key.v[i / 2u]);
    precise float low = query[i] * k.x;
    sum += double(low);
    precise float high = query[i + 1u] * k.y;
    sum += double(high);
  }
  return float(sum);
}

// Steps 1 and 2 for the keys [j0, j0 + n) of the list.
void load_tile(uint j0, uint n, uint kv_head, int position, int min_position) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, pairs = p.head_dim / 2u;
  if (lane < n) {
    uint slot;
    tile_visible[lane] = visible_key(j0 + lane, position, min_position, slot);
    tile_slots[lane] = slot;
  }
  barrier();
  for (uint i = lane; i < n * pairs; i += stride) {
    const uint k = i / pairs;
    if (tile_visible[k]) {
      tile_values[i] = U32Ptr(p.v_cache + uint64_t(kv_row_offset(tile_slots[k], kv_head)) * 2u).v[i - k * pairs];
    }
  }
  if (lane < n) tile_scores[lane] = tile_visible[lane] ? key_score(tile_slots[lane], kv_head) : kMinusInfinity;
  barrier();
}

// This invocation's pairs of output dims: pair_index(i) for each i < kMaxPairsPerLane where
// owns_pair(i). Loops over them are unrolled to constant indices, so the accumulators stay in
// registers.
uint pair_index(uint i) { return gl_LocalInvocationID.x + i * gl_WorkGroupSize.x; }
bool owns_pair(uint i) { return pair_index(i) < p.head_dim / 2u; }

// One step of the online softmax: key `score` with this invocation's values v (running maximum
// m, sum s and the f16 accumulators).
void accumulate_key(float score, vec2 v[kMaxPairsPerLane], inout float m, inout float s,
                    inout vec2 acc[kMaxPairsPerLane]) {
  float ms = 1.0, vs = 1.0;
  if (score > m) {  // a new maximum: rescale what was accumulated (ggml_vec_scale_f16)
    ms = exp(m - score);
    m = score;
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      if (owns_pair(i)) acc[i] = vec2(round_to_f16(acc[i].x * ms), round_to_f16(acc[i].y * ms));
    }
  } else {
    vs = exp(score - m);
  }
  [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
    if (owns_pair(i)) {
      acc[i] = vec2(round_to_f16(fma(v[i].x, vs, acc[i].x)), round_to_f16(fma(v[i].y, vs, acc[i].y)));
    }
  }
  precise float scaled = s * ms;  // S = S*ms + vs, the product rounded on its own
  s = scaled + vs;
}

// Step 3: the tile's n keys in order.
void accumulate_tile(uint n, inout float m, inout float s, inout vec2 acc[kMaxPairsPerLane]) {
  const uint pairs = p.head_dim / 2u;
  for (uint k = 0; k < n; ++k) {
    const float score = tile_scores[k];
    if (score == kMinusInfinity) continue;
    vec2 v[kMaxPairsPerLane];
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      if (owns_pair(i)) v[i] = unpackHalf2x16(tile_values[k * pairs + pair_index(i)]);
    }
    accumulate_key(score, v, m, s, acc);
  }
  barrier();  // before the next tile overwrites the shared slots, scores and values
}

void main() {
  const bool split = p.scheme == 1u;
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * p.n_head * (split ? p.n_chunks : 1u)) return;  // the whole workgroup
  const uint head_index = split ? index / p.n_chunks : index, chunk = split ? index % p.n_chunks : 0u;
  const uint t = head_index / p.n_head, h = head_index % p.n_head;
  // The listed keys this workgroup reads: its chunk of llama.cpp's cells, or all of them.
  const uint begin = split ? list_index(int(chunk * p.chunk_cells)) : 0u;
  const uint end = split ? list_index(int((chunk + 1u) * p.chunk_cells)) : p.n_view;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  const uint kv_head = h / (p.n_head / p.n_head_kv);
  const int position = I32Ptr(p.positions).v[t];
  const int min_position = min_visible_position(position);

  F32Ptr q = F32Ptr(p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint d = lane; d < dim; d += stride) query[d] = round_to_f16(q.v[d]);
  barrier();

  float m = kMinusInfinity, s = 0.0;
  vec2 acc[kMaxPairsPerLane];
  [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) acc[i] = vec2(0.0);
  const uint capacity = tile_capacity();
  for (uint j0 = begin; j0 < end; j0 += capacity) {
    const uint n = min(capacity, end - j0);
    load_tile(j0, n, kv_head, position, min_position);
    accumulate_tile(n, m, s, acc);
  }

  if (split) {
    F32Ptr partial = F32Ptr(p.partials + uint64_t(index) * (2u + dim) * 4u);
    if (lane == 0u) {
      partial.v[0] = m;
      partial.v[1] = s;
    }
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      if (!owns_pair(i)) continue;
      partial.v[2u + 2u * pair_index(i)] = acc[i].x;
      partial.v[3u + 2u * pair_index(i)] = acc[i].y;
    }
    return;
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  F32Ptr dst = F32Ptr(p.dst + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
    if (!owns_pair(i)) continue;
    dst.v[2u * pair_index(i)] = acc[i].x * inverse;
    dst.v[2u * pair_index(i) + 1u] = acc[i].y * inverse;
  }
}
