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
//   scheme 1, split-KV (512+ cells; llama.cpp's CPU backend splits single tokens only, the GPU
//     every batch of fewer than 64): the one-row scheme on each of n_chunks chunks of listed keys
//     (the host passes first_cell 0, so cells are list positions), one workgroup per (token, head,
//     chunk), each writing its partial maximum, sum and accumulators (a chunk with no key the
//     token sees: sum 0); attention_combine.comp merges them as llama.cpp does.
// The output is f32, or (out_q != 0) the Q8_0 activations of the wo product, quantized here
// (quantize_workgroup.glsl) instead of by another dispatch.
// The work is spread without changing that arithmetic. Keys are taken in batches of KEY_BATCH:
//   1. the workgroup loads the batch's values into shared memory, and its GROUPS groups of 64
//      invocations form the scores' 64 partial sums of ggml_vec_dot_f16 (AVX-512: 4 accumulators
//      of 16 lanes, each a fused multiply-add chain over steps of 64 elements), one invocation
//      per partial sum, consecutive invocations reading consecutive key elements;
//   2. one invocation per key adds the partial sums in ggml's order (and the elements past the
//      last whole step, in double);
//   3. every invocation runs the online softmax over the batch's keys in order for its own
//      pairs of output dims, reading the values from shared memory.
// Workgroup index = t * n_head + h (scheme 1: (t * n_head + h, chunk) = (index / n_chunks,
// index % n_chunks)).
// Each batch is a chain of dependent phases (loads, per-key sums, accumulation, each ending in a
// barrier), so at decode, where a head's keys are one workgroup's serial work, larger batches mean
// fewer chains; the batch's values and partial sums in shared memory bound its size.
// Needs shaderFloat64 (sums in double, as the CPU). Specialization constants: 0 MAX_HEAD_DIM
// (even), 1 KEY_BATCH (a multiple of GROUPS, at most 64 x GROUPS), 2 GROUPS, 3 the workgroup's
// invocations (64 x GROUPS).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 1) const uint KEY_BATCH = 16;  // keys per batch
layout(constant_id = 2) const uint GROUPS = 2;      // groups of kSlotSums invocations in the workgroup
// The scheme, fixed per pipeline so that the split-KV chunks' kernel carries no code (and no
// registers) of the one-row output and its quantization: 0 one-row, 1 split-KV.
layout(constant_id = 4) const uint SCHEME = 0;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"

const uint kSlotSums = 64;  // ggml_vec_dot_f16's partial sums: 4 accumulators x 16 lanes
const uint kKeysPerGroup = KEY_BATCH / GROUPS;
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + GROUPS * kSlotSums - 1u) / (GROUPS * kSlotSums);

shared float query[SHARED_ROWS_QUERY(MAX_HEAD_DIM)];
shared float slot_sums[SHARED_ROWS_SLOT_SUMS(KEY_BATCH)];
shared float batch_scores[SHARED_ROWS_SCORES(KEY_BATCH)];
shared uint batch_values[SHARED_ROWS_VALUES(KEY_BATCH, MAX_HEAD_DIM)];  // f16 pairs: dims 2i, 2i + 1 in word i

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
      batch_values[k * (MAX_HEAD_DIM / 2u) + w] = U32Ptr(p.v_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u).v[w];
    }
  }
  // Group g of 64 invocations takes keys g, g + GROUPS, ...: each invocation forms partial sum s
  // (accumulator s / 16, lane s % 16: elements i + s of each step i) of all its keys at once, so
  // that the loads of every key are in flight together.
  const uint whole = dim & ~63u;
  const uint group = lane / kSlotSums, s = lane % kSlotSums;
  uint key_rows[kKeysPerGroup];  // 32-bit element offsets, not 64-bit addresses: fewer registers
  bool visible[kKeysPerGroup];
  float acc[kKeysPerGroup];
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    const uint k = group + m * GROUPS;
    uint slot = 0u;
    visible[m] = k < n && visible_key(j0 + k, position, min_position, slot);
    key_rows[m] = kv_row_offset(slot, kv_head);
    acc[m] = 0.0;
  }
  for (uint i = 0; i < whole; i += 64u) {
    float key_values[kKeysPerGroup];
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
      key_values[m] = visible[m] ? float(F16Ptr(p.k_cache).v[key_rows[m] + i + s]) : 0.0;
    }
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = fma(query[i + s], key_values[m], acc[m]);
  }
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    if (visible[m]) slot_sums[(group + m * GROUPS) * kSlotSums + s] = acc[m];
  }
  barrier();
  if (lane < n) {
    const uint k = lane;
    uint slot;
    float score = kMinusInfinity;
    if (visible_key(j0 + k, position, min_position, slot)) {
      float lanes[16];
      for (uint l = 0; l < 16; ++l) {
        const uint base = k * kSlotSums + l;
        precise float sum = (slot_sums[base] + slot_sums[base + 32u]) + (slot_sums[base + 16u] + slot_sums[base + 48u]);
        lanes[l] = sum;
      }
      double sum = double(reduce16(lanes));
      F16Ptr key = F16Ptr(p.k_cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u);
      for (uint i = whole; i < dim; ++i) {
        precise float product = query[i] * float(key.v[i]);
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

void main() {
  load_attention_step();
  const bool split = SCHEME == 1u;
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

  F32Ptr q = F32Ptr(p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  for (uint d = lane; d < dim; d += stride) query[d] = round_to_f16(q.v[d]);
  barrier();

  float m = kMinusInfinity, s = 0.0;
  vec2 acc[kMaxPairsPerLane];
  for (uint i = 0; i < kMaxPairsPerLane; ++i) acc[i] = vec2(0.0);
  for (uint j0 = begin; j0 < end; j0 += KEY_BATCH) {
    const uint n = min(KEY_BATCH, end - j0);
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
