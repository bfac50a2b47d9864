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
// The work is spread without changing that arithmetic. Keys are taken in batches of kBatch, and
// at decode the kernel is a chain of memory latencies (one workgroup per head), so each batch
// issues its loads together:
//   0. the batch's slots (and whether the token sees each key) were looked up during the batch
//      before (view -> slot -> position is a chain of two loads) and wait in shared memory;
//   1. every invocation loads the values of its own pairs of output dims for all the batch's
//      keys into registers, and its groups of 64 invocations load all the key elements of their
//      partial sums of ggml_vec_dot_f16 (AVX-512: 4 accumulators of 16 lanes, each a fused
//      multiply-add chain over steps of 64 elements; one invocation per partial sum) before
//      forming them;
//   2. one invocation per key adds the partial sums in ggml's order (and the elements past the
//      last whole step, in double);
//   3. every invocation runs the online softmax over the batch's keys in order for its own
//      pairs of output dims.
// Workgroup index = t * n_head + h (scheme 1: (h, chunk) = (index / n_chunks, index % n_chunks)).
// 128 invocations. Needs shaderFloat64 (sums in double, as the CPU). Specialization constant:
// 0 MAX_HEAD_DIM (even).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;

const uint kBatch = 16;        // keys per batch
const uint kSlotSums = 64;     // ggml_vec_dot_f16's partial sums: 4 accumulators x 16 lanes
const uint kGroups = 2;        // groups of kSlotSums invocations in the workgroup
const uint kKeysPerGroup = kBatch / kGroups;
const uint kMaxSteps = (MAX_HEAD_DIM + kSlotSums - 1u) / kSlotSums;  // of ggml_vec_dot_f16
const uint kMaxPairsPerLane = (MAX_HEAD_DIM / 2u + 127u) / 128u;
const uint kHidden = 0xffffffffu;  // a listed key the token does not see

shared float query[MAX_HEAD_DIM];
shared float slot_sums[kBatch * kSlotSums];
shared float batch_scores[kBatch];
shared uint batch_slots[2][kBatch];  // this batch's and the next one's

uint list_index(int cell) { return uint(clamp(cell - p.first_cell, 0, int(p.n_view))); }

// Listed key j's slot, or kHidden when it is past `end` or the token does not see it.
uint lookup_slot(uint j, uint end, int position, int min_position) {
  uint slot;
  return j < end && visible_key(j, position, min_position, slot) ? slot : kHidden;
}

uint64_t cache_row(uint64_t cache, uint slot, uint kv_head) { return cache + uint64_t(kv_row_offset(slot, kv_head)) * 2u; }

// Step 1's values: pair lane + i * 128 of key k, as packed f16.
void load_values(const uint slots[kBatch], uint kv_head, out uint values[kBatch][kMaxPairsPerLane]) {
  const uint lane = gl_LocalInvocationID.x, pairs = p.head_dim / 2u;
  [[unroll]] for (uint k = 0; k < kBatch; ++k) {
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      const uint w = lane + i * gl_WorkGroupSize.x;
      values[k][i] = slots[k] != kHidden && w < pairs ? U32Ptr(cache_row(p.v_cache, slots[k], kv_head)).v[w] : 0u;
    }
  }
}

// Steps 1 and 2: batch_scores[k] is the batch's key k's score, -inf when the token does not see it.
void score_batch(const uint slots[kBatch], uint kv_head) {
  const uint lane = gl_LocalInvocationID.x, dim = p.head_dim;
  const uint whole = dim & ~63u;
  // Group g of 64 invocations takes keys g, g + kGroups, ...: invocation s forms partial sum s
  // (accumulator s / 16, lane s % 16: elements i + s of each step i) of all its keys.
  const uint group = lane / kSlotSums, s = lane % kSlotSums;
  float key_values[kMaxSteps][kKeysPerGroup];
  [[unroll]] for (uint step = 0; step < kMaxSteps; ++step) {
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
      const uint slot = slots[group + m * kGroups];
      key_values[step][m] = slot != kHidden && step * 64u < whole
                                ? float(F16Ptr(cache_row(p.k_cache, slot, kv_head)).v[step * 64u + s])
                                : 0.0;
    }
  }
  float acc[kKeysPerGroup];
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = 0.0;
  [[unroll]] for (uint step = 0; step < kMaxSteps; ++step) {
    if (step * 64u >= whole) break;
    [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) acc[m] = fma(query[step * 64u + s], key_values[step][m], acc[m]);
  }
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) slot_sums[(group + m * kGroups) * kSlotSums + s] = acc[m];
  barrier();
  if (lane < kBatch) {
    const uint k = lane, slot = slots[k];
    float score = kMinusInfinity;
    if (slot != kHidden) {
      float lanes[16];
      for (uint l = 0; l < 16; ++l) {
        const uint base = k * kSlotSums + l;
        precise float sum = (slot_sums[base] + slot_sums[base + 32u]) + (slot_sums[base + 16u] + slot_sums[base + 48u]);
        lanes[l] = sum;
      }
      double sum = double(reduce16(lanes));
      F16Ptr key = F16Ptr(cache_row(p.k_cache, slot, kv_head));
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

// Step 3: the one-row online softmax over the batch's keys for this invocation's pairs of dims
// (lane, lane + 128, ...): running maximum m, sum s and the f16 accumulators.
void accumulate_batch(const uint values[kBatch][kMaxPairsPerLane], inout float m, inout float s,
                      inout vec2 acc[kMaxPairsPerLane]) {
  [[unroll]] for (uint k = 0; k < kBatch; ++k) {
    const float score = batch_scores[k];
    if (score == kMinusInfinity) continue;
    float ms = 1.0, vs = 1.0;
    if (score > m) {  // a new maximum: rescale what was accumulated (ggml_vec_scale_f16)
      ms = exp(m - score);
      m = score;
      [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
        acc[i] = vec2(round_to_f16(acc[i].x * ms), round_to_f16(acc[i].y * ms));
      }
    } else {
      vs = exp(score - m);
    }
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      const vec2 v = unpackHalf2x16(values[k][i]);
      acc[i] = vec2(round_to_f16(fma(v.x, vs, acc[i].x)), round_to_f16(fma(v.y, vs, acc[i].y)));
    }
    precise float scaled = s * ms;  // S = S*ms + vs, the product rounded on its own
    s = scaled + vs;
  }
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
  [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) acc[i] = vec2(0.0);
  if (lane < kBatch) batch_slots[0][lane] = lookup_slot(begin + lane, end, position, min_position);
  barrier();
  uint current = 0u;
  for (uint j0 = begin; j0 < end; j0 += kBatch, current ^= 1u) {
    // The next batch's slots, looked up while this one is scored (stored after its last read).
    const uint next_slot = lane < kBatch ? lookup_slot(j0 + kBatch + lane, end, position, min_position) : kHidden;
    uint slots[kBatch];
    [[unroll]] for (uint k = 0; k < kBatch; ++k) slots[k] = batch_slots[current][k];
    uint values[kBatch][kMaxPairsPerLane];
    load_values(slots, kv_head, values);
    score_batch(slots, kv_head);
    accumulate_batch(values, m, s, acc);
    if (lane < kBatch) batch_slots[current ^ 1u][lane] = next_slot;
    barrier();  // the scores may be overwritten, the next slots are in place
  }

  if (split) {
    F32Ptr partial = F32Ptr(p.partials + uint64_t(index) * (2u + dim) * 4u);
    if (lane == 0u) {
      partial.v[0] = m;
      partial.v[1] = s;
    }
    [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
      const uint w = lane + i * stride;
      if (w >= pairs) break;
      partial.v[2u + 2u * w] = acc[i].x;
      partial.v[3u + 2u * w] = acc[i].y;
    }
    return;
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  F32Ptr dst = F32Ptr(p.dst + (uint64_t(t) * p.n_head * dim + h * dim) * 4u);
  [[unroll]] for (uint i = 0; i < kMaxPairsPerLane; ++i) {
    const uint w = lane + i * stride;
    if (w >= pairs) break;
    dst.v[2u * w] = acc[i].x * inverse;
    dst.v[2u * w + 1u] = acc[i].y * inverse;
  }
}
