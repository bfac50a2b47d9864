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
//     listed keys (the host passes first_cell 0, so cells are list positions), one workgroup per
//     (head, chunk), each writing its partial maximum, sum and accumulators;
//     attention_combine.comp merges them as llama.cpp does.
// The output is f32, or (out_q != 0) the Q8_0 activations of the wo product, quantized here
// (quantize_workgroup.glsl) instead of by another dispatch.
// The work is spread without changing that arithmetic. Keys are taken in batches of kBatch:
//   1. the workgroup loads the batch's values into shared memory, and its groups of 64
//      invocations form the scores' 64 partial sums of ggml_vec_dot_f16 (AVX-512: 4 accumulators
//      of 16 lanes, each a fused multiply-add chain over steps of 64 elements), one invocation
//      per partial sum, consecutive invocations reading consecutive key elements;
//   2. one invocation per key adds the partial sums in ggml's order (and the elements past the
//      last whole step, in double);
//   3. every invocation runs the online softmax over the batch's keys in order for its own
//      pairs of output dims, reading the values from shared memory.
// Workgroup index = t * n_head + h (scheme 1: (h, chunk) = (index / n_chunks, index % n_chunks)).
//
// Decode (one token, p.inputs != 0) forms the token's own attention inputs here, as
// attention_inputs.comp would (head_inputs.glsl), instead of waiting for that dispatch and its
// barrier: each workgroup norms, rotates and scales its query head from the projection, and on a
// layer that writes KV the workgroups whose keys include the token's own slot (step.own_index,
// found by the host) also form the token's key and value for their KV head and use them from
// shared memory there; the first query head of each KV head among them writes them to the cache
// for the steps after. Workgroups that read that slot never read the cache there, so none waits
// for the write.
// 128 invocations. Needs shaderFloat64 (sums in double, as the CPU). Specialization constant:
// 0 MAX_HEAD_DIM (even).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"
const uint MAX_SUBGROUPS = 32;  // 128 invocations over the smallest subgroups device_info.cpp allows (4)
#include "reduce.glsl"
#define HEAD_MIN_WORKGROUP 128u
#include "head_inputs.glsl"
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer AttentionInputsPtr { AttentionInputs v; };

const uint kBatch = 16;        // keys per batch
const uint kSlotSums = 64;     // ggml_vec_dot_f16's partial sums: 4 accumulators x 16 lanes
const uint kGroups = 2;        // groups of kSlotSums invocations in the workgroup
const uint kKeysPerGroup = kBatch / kGroups;
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + 127u) / 128u;

shared float query[MAX_HEAD_DIM];
shared float slot_sums[kBatch * kSlotSums];
shared float batch_scores[kBatch];
shared uint batch_values[kBatch * (MAX_HEAD_DIM / 2u)];  // f16 pairs: dims 2i, 2i + 1 in word i
// Decode: the token's own slot (kNoSlot when its inputs were formed before or its keys are in
// another chunk), key (f16 values), value (f16 pairs) and the 64 partial sums of its score.
const uint kNoSlot = 0xffffffffu;
uint own_slot = kNoSlot;
shared float own_key[MAX_HEAD_DIM];
shared uint own_value[MAX_HEAD_DIM / 2u];
shared float own_sums[kSlotSums];

// Partial sum j of listed key k's score: the token's own key's from own_sums, since the cache
// row the step 1 loop read for it may not be written yet.
float partial_sum(bool own, uint k, uint j) { return own ? own_sums[j] : slot_sums[k * kSlotSums + j]; }

uint list_index(int cell) { return uint(clamp(cell - step.first_cell, 0, int(step.n_view))); }

// Steps 1 and 2 for the keys [j0, j0 + n) of the list: batch_scores[k] is key j0 + k's score,
// -inf when the token does not see it; batch_values holds the values of the visible ones.
void score_batch(uint j0, uint n, uint kv_head, int position, int min_position) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  const uint pairs = dim / 2u;
  for (uint i = lane; i < n * pairs; i += stride) {
    const uint k = i / pairs, w = i % pairs;
    uint slot;
    if (visible_key(j0 + k, position, min_position, slot)) {
      const uint cached = U32Ptr(p.v_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u).v[w];
      batch_values[k * (MAX_HEAD_DIM / 2u) + w] = slot == own_slot ? own_value[w] : cached;
    }
  }
  // Group g of 64 invocations takes keys g, g + kGroups, ...: each invocation forms partial sum s
  // (accumulator s / 16, lane s % 16: elements i + s of each step i) of all its keys at once, so
  // that the loads of every key are in flight together. (The token's own key is read here too,
  // from a cache row that may not be written yet; step 2 takes its sums from own_sums instead, so
  // that this loop stays the same for every key.)
  const uint whole = dim & ~63u;
  const uint group = lane / kSlotSums, s = lane % kSlotSums;
  uint64_t keys[kKeysPerGroup];
  bool visible[kKeysPerGroup];
  float acc[kKeysPerGroup];
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    const uint k = group + m * kGroups;
    uint slot = 0u;
    visible[m] = k < n && visible_key(j0 + k, position, min_position, slot);
    keys[m] = p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u;
    acc[m] = 0.0;
  }
  for (uint i = 0; i < whole; i += 64u) {
    float key_values[kKeysPerGroup];
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
      key_values[m] = visible[m] ? float(F16Ptr(keys[m]).v[i + s]) : 0.0;
    }
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = fma(query[i + s], key_values[m], acc[m]);
  }
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    if (visible[m]) slot_sums[(group + m * kGroups) * kSlotSums + s] = acc[m];
  }
  barrier();
  if (lane < n) {
    const uint k = lane;
    uint slot;
    float score = kMinusInfinity;
    if (visible_key(j0 + k, position, min_position, slot)) {
      const bool own = slot == own_slot;
      float lanes[16];
      for (uint l = 0; l < 16; ++l) {
        precise float sum = (partial_sum(own, k, l) + partial_sum(own, k, l + 32u)) +
                            (partial_sum(own, k, l + 16u) + partial_sum(own, k, l + 48u));
        lanes[l] = sum;
      }
      double sum = double(reduce16(lanes));
      F16Ptr key = F16Ptr(p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u);
      for (uint i = whole; i < dim; ++i) {
        precise float product = query[i] * (own ? own_key[i] : float(key.v[i]));
        sum += double(product);
      }
      score = float(sum);
    }
    batch_scores[k] = score;
  }
  barrier();
}

// Step 3: the one-row online softmax over the batch's n keys for this invocation's pairs of
// dims (lane, lane + stride, ...): running maximum m, sum s and the f16 accumulators.
void accumulate_batch(uint n, inout float m, inout float s, inout vec2 acc[kMaxPairsPerLane]) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, pairs = p.head_dim / 2u;
  for (uint k = 0; k < n; ++k) {
    const float score = batch_scores[k];
    if (score == kMinusInfinity) continue;
    float ms = 1.0, vs = 1.0;
    if (score > m) {  // a new maximum: rescale what was accumulated (ggml_vec_scale_f16)
      ms = exp(m - score);
      m = score;
      for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
        acc[i] = vec2(round_to_f16(acc[i].x * ms), round_to_f16(acc[i].y * ms));
      }
    } else {
      vs = exp(score - m);
    }
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      const vec2 v = unpackHalf2x16(batch_values[k * (MAX_HEAD_DIM / 2u) + w]);
      acc[i] = vec2(round_to_f16(fma(v.x, vs, acc[i].x)), round_to_f16(fma(v.y, vs, acc[i].y)));
    }
    precise float scaled = s * ms;  // S = S*ms + vs, the product rounded on its own
    s = scaled + vs;
  }
  barrier();  // before the next batch overwrites the shared scores and values
}

// Decode: the token's query (normed, rotated, scaled, rounded to f16 as the one-row scheme reads
// it) into `query`; on a layer that writes KV, its key and value for kv_head into own_key and
// own_value when `lists_own` (its keys include the token's slot), written to the cache too by the
// first query head of each KV head (`writer`), with the bits attention_inputs.comp writes.
void form_own_inputs(const AttentionInputs in_, uint64_t query_head, uint h, uint kv_head, bool lists_own) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  const uint half_rot = in_.n_rot / 2u;
  prepare_head(query_head, in_.q_norm, true, half_rot, in_.rope, dim, in_.eps);
  for (uint d = lane; d < dim; d += stride) {
    query[d] = round_to_f16(in_.query_scale == 1.0 ? head[d] : head[d] * in_.query_scale);
  }
  // A KV-shared layer's source layer wrote this token's KV; other chunks do not list it.
  if (in_.n_head_kv == 0u || !lists_own) return;
  own_slot = U32Ptr(in_.slots).v[0];
  const uint64_t row = uint64_t(kv_row_offset(own_slot, kv_head)) * 2u;
  const bool writer = h % (p.n_head / p.n_head_kv) == 0u;
  const uint64_t kv_head_offset = uint64_t(kv_head) * dim * 4u;
  barrier();  // `head` is taken again
  prepare_head(in_.k + kv_head_offset, in_.k_norm, true, half_rot, in_.rope, dim, in_.eps);
  for (uint d = lane; d < dim; d += stride) {
    const uint bits = f32_to_f16_bits(head[d]);
    own_key[d] = f16_bits_to_f32(bits);
    if (writer) U16Ptr(p.k_cache + row).v[d] = uint16_t(bits);
  }
  barrier();
  prepare_head(in_.v + kv_head_offset, 0ul, in_.v_norm != 0u, 0u, in_.rope, dim, in_.eps);
  for (uint w = lane; w < dim / 2u; w += stride) {
    const uint bits = f32_to_f16_bits(head[2u * w]) | (f32_to_f16_bits(head[2u * w + 1u]) << 16u);
    own_value[w] = bits;
    if (writer) U32Ptr(p.v_cache + row).v[w] = bits;
  }
}

// own_sums: the own key's partial sums as step 1 forms every key's (invocation s: elements i + s of
// each step i of 64, in order).
void form_own_partial_sums() {
  const uint s = gl_LocalInvocationID.x;
  if (s >= kSlotSums) return;
  float acc = 0.0;
  for (uint i = 0; i < (p.head_dim & ~63u); i += 64u) acc = fma(query[i + s], own_key[i + s], acc);
  own_sums[s] = acc;
}

void main() {
  load_attention_step();
  const bool split = step.scheme == 1u;
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * p.n_head * (split ? step.n_chunks : 1u)) return;  // the whole workgroup
  const uint head_index = split ? index / step.n_chunks : index, chunk = split ? index % step.n_chunks : 0u;
  const uint t = head_index / p.n_head, h = head_index % p.n_head;
  // The listed keys this workgroup reads: its chunk of llama.cpp's cells, or all of them.
  const uint begin = split ? list_index(int(chunk * step.chunk_cells)) : 0u;
  const uint end = split ? list_index(int((chunk + 1u) * step.chunk_cells)) : step.n_view;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = p.head_dim, pairs = dim / 2u;
  const uint kv_head = h / (p.n_head / p.n_head_kv);
  const int position = I32Ptr(p.positions).v[t];
  const int min_position = min_visible_position(position);

  const uint64_t query_head = p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u;
  if (p.inputs != 0ul) {
    // (A token its view does not list still has its KV written, by the first chunk.)
    const bool lists_own = step.own_index == 0xffffffffu ? chunk == 0u : step.own_index >= begin && step.own_index < end;
    form_own_inputs(AttentionInputsPtr(p.inputs).v, query_head, h, kv_head, lists_own);
    if (own_slot != kNoSlot) {  // uniform: the same in the whole workgroup
      barrier();  // the query and own_key in place
      form_own_partial_sums();
    }
  } else {
    F32Ptr q = F32Ptr(query_head);
    for (uint d = lane; d < dim; d += stride) query[d] = round_to_f16(q.v[d]);
  }
  barrier();

  float m = kMinusInfinity, s = 0.0;
  vec2 acc[kMaxPairsPerLane];
  for (uint i = 0; i < kMaxPairsPerLane; ++i) acc[i] = vec2(0.0);
  for (uint j0 = begin; j0 < end; j0 += kBatch) {
    const uint n = min(kBatch, end - j0);
    score_batch(j0, n, kv_head, position, min_position);
    accumulate_batch(n, m, s, acc);
  }

  if (split) {
    F32Ptr partial = F32Ptr(p.partials + uint64_t(index) * (2u + dim) * 4u);
    if (lane == 0u) {
      partial.v[0] = m;
      partial.v[1] = s;
    }
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      partial.v[2u + 2u * w] = acc[i].x;
      partial.v[3u + 2u * w] = acc[i].y;
    }
    return;
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  const uint64_t first = uint64_t(t) * p.n_head * dim + h * dim;  // the head's first output value
  if (p.out_q != 0ul) {  // the Q8_0 activations of wo (head_dim a multiple of 32: whole blocks)
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      quantize_values[2u * w] = acc[i].x * inverse;
      quantize_values[2u * w + 1u] = acc[i].y * inverse;
    }
    quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  F32Ptr dst = F32Ptr(p.dst + first * 4u);
  for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
    dst.v[2u * w] = acc[i].x * inverse;
    dst.v[2u * w + 1u] = acc[i].y * inverse;
  }
}
