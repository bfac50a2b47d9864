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
//     token sees: sum 0); the last workgroup of a (token, head) to finish merges them as
//     llama.cpp does (merge_partials below), so no second dispatch and barrier wait for the
//     merge.
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
// (even), 1 KEY_BATCH (a multiple of GROUPS, at most 64 x GROUPS; split-KV: at least 4 x GROUPS,
// for the merge's staging), 2 GROUPS, 3 the workgroup's invocations (64 x GROUPS).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "attention_common.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 3) in;
layout(constant_id = 0) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 1) const uint KEY_BATCH = 16;  // keys per batch
layout(constant_id = 2) const uint GROUPS = 2;      // groups of kSlotSums invocations in the workgroup
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
  uint64_t keys[kKeysPerGroup];
  bool visible[kKeysPerGroup];
  float acc[kKeysPerGroup];
  [[unroll]] for (uint m = 0; m < kKeysPerGroup; ++m) {
    const uint k = group + m * GROUPS;
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

// ------------------------------------------------------------- split-KV: the chunks merged
// A chunk's workgroup writes its partial (maximum, sum, accumulators), then counts itself in
// p.arrivals[t * n_head + h]; the workgroup that arrives last merges every chunk of that (token,
// head) in the way llama.cpp merges chunks (attention_reference.cpp combine_partials: the new
// chunk's product rounded, the old sum fused onto it; chunks with no visible key skipped) and
// sets the count back to zero for the next layer (which runs after a pipeline barrier). Partials
// are written and read through coherent references, ordered by the count's atomic and memory
// barriers (the arrival count of grid_sync_bench.comp's grid barrier).
// A merge is a serial chain over chunks, so groups of kMergeLanes invocations each merge a
// contiguous run of the chunks in order, their loads kMergeLookahead chunks ahead, and the groups'
// results are then merged in group order (with the ring full a global layer has 124 chunks of 32
// keys). With 128 invocations that is four runs, as the separate merge dispatch this replaces had:
// the same f32 roundings.
const uint kMergeLanes = 32u;
const uint kMergeGroups = gl_WorkGroupSize.x / kMergeLanes;
const uint kMergeDims = (MAX_HEAD_DIM + kMergeLanes - 1u) / kMergeLanes;
const uint kMergeLookahead = (64u + kMergeDims - 1u) / kMergeDims;  // about 64 values in flight a lane

shared bool merges_chunks;

CoherentF32 chunk_partial(uint head_index, uint chunk) {
  return CoherentF32(p.partials + (uint64_t(head_index) * step.n_chunks + chunk) * (2u + p.head_dim) * 4u);
}

void write_partial(uint index, float m, float s, const vec2 acc[kMaxPairsPerLane]) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, pairs = p.head_dim / 2u;
  CoherentF32 partial = CoherentF32(p.partials + uint64_t(index) * (2u + p.head_dim) * 4u);
  if (lane == 0u) {
    partial.v[0] = m;
    partial.v[1] = s;
  }
  for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
    partial.v[2u + 2u * w] = acc[i].x;
    partial.v[3u + 2u * w] = acc[i].y;
  }
}

// Whether this workgroup is the last of its (token, head)'s chunks to have written its partial
// (the same answer for every invocation).
bool last_to_arrive(uint head_index) {
  memoryBarrierBuffer();  // this invocation's partial before the count
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    CoherentU32 arrivals = CoherentU32(p.arrivals);
    merges_chunks = atomicAdd(arrivals.v[head_index], 1u) + 1u == step.n_chunks;
    if (merges_chunks) arrivals.v[head_index] = 0u;
    memoryBarrierBuffer();  // the other chunks' partials after their counts
  }
  barrier();
  return merges_chunks;
}

// A running merge of one lane of a group: maximum, sum and the lane's dims lane, lane +
// kMergeLanes, ...
struct Merge {
  float m, s;
  float values[kMergeDims];
};

void start_merge(out Merge merge) {
  merge.m = kMinusInfinity;
  merge.s = 0.0;
  for (uint k = 0; k < kMergeDims; ++k) merge.values[k] = 0.0;
}

// Merges a part (maximum cm, sum cs, the lane's values) into `merge`, as llama.cpp merges a chunk.
void merge_part(inout Merge merge, float cm, float cs, const float values[kMergeDims]) {
  const float m_new = max(merge.m, cm);
  const float scale_old = exp(merge.m - m_new), scale_new = exp(cm - m_new);
  [[unroll]] for (uint k = 0; k < kMergeDims; ++k) {
    precise float added = values[k] * scale_new;
    merge.values[k] = fma(merge.values[k], scale_old, added);
  }
  precise float added = cs * scale_new;
  merge.s = fma(merge.s, scale_old, added);
  merge.m = m_new;
}

// Chunks [begin, end) of a (token, head) merged in order by one group; `lane` is the invocation's
// index in it.
void merge_chunks(uint head_index, uint begin, uint end, uint lane, out Merge merge) {
  start_merge(merge);
  for (uint c0 = begin; c0 < end; c0 += kMergeLookahead) {
    float maxima[kMergeLookahead], sums[kMergeLookahead], values[kMergeLookahead][kMergeDims];
    [[unroll]] for (uint j = 0; j < kMergeLookahead; ++j) {
      sums[j] = 0.0;
      if (c0 + j >= end) continue;
      CoherentF32 partial = chunk_partial(head_index, c0 + j);
      maxima[j] = partial.v[0];
      sums[j] = partial.v[1];
      [[unroll]] for (uint k = 0; k < kMergeDims; ++k) {
        const uint d = lane + k * kMergeLanes;
        values[j][k] = d < p.head_dim ? partial.v[2u + d] : 0.0;
      }
    }
    [[unroll]] for (uint j = 0; j < kMergeLookahead; ++j) {
      if (sums[j] != 0.0) merge_part(merge, maxima[j], sums[j], values[j]);
    }
  }
}

// Every chunk of (token, head) `head_index` merged and normalized into quantize_values[0, dim).
// The groups' runs meet in the batch arrays, free since the last batch's closing barrier:
// slot_sums holds their maxima and sums, batch_values their values (KEY_BATCH >= 4 x GROUPS, so
// kMergeGroups x MAX_HEAD_DIM words fit).
void merge_partials(uint head_index) {
  const uint group = gl_LocalInvocationID.x / kMergeLanes, lane = gl_LocalInvocationID.x % kMergeLanes;
  const uint dim = p.head_dim, n_chunks = step.n_chunks;
  const uint per_group = (n_chunks + kMergeGroups - 1u) / kMergeGroups;
  const uint begin = min(group * per_group, n_chunks), end = min(begin + per_group, n_chunks);
  Merge part;
  merge_chunks(head_index, begin, end, lane, part);
  if (lane == 0u) {
    slot_sums[group] = part.m;
    slot_sums[kMergeGroups + group] = part.s;
  }
  for (uint k = 0, d = lane; d < dim; ++k, d += kMergeLanes) {
    batch_values[group * MAX_HEAD_DIM + d] = floatBitsToUint(part.values[k]);
  }
  barrier();
  if (group != 0u) return;  // returns to store_output's barrier, which every invocation reaches
  Merge merge;
  start_merge(merge);
  for (uint g = 0; g < kMergeGroups; ++g) {
    const float group_sum = slot_sums[kMergeGroups + g];
    if (group_sum == 0.0) continue;
    float values[kMergeDims];
    [[unroll]] for (uint k = 0; k < kMergeDims; ++k) {
      const uint d = lane + k * kMergeLanes;
      values[k] = d < dim ? uintBitsToFloat(batch_values[g * MAX_HEAD_DIM + d]) : 0.0;
    }
    merge_part(merge, slot_sums[g], group_sum, values);
  }
  const float inverse = merge.s == 0.0 ? 0.0 : div_rn(1.0, merge.s);
  for (uint k = 0, d = lane; d < dim; ++k, d += kMergeLanes) quantize_values[d] = merge.values[k] * inverse;
}

// ------------------------------------------------------------------------------------ output
// The head's output from quantize_values[0, dim): f32 to dst, or wo's Q8_0 activations (head_dim
// a multiple of 32: whole blocks).
void store_output(uint64_t first) {
  if (p.out_q != 0ul) {
    quantize_shared_q8(p.head_dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  barrier();
  F32Ptr dst = F32Ptr(p.dst + first * 4u);
  for (uint d = gl_LocalInvocationID.x; d < p.head_dim; d += gl_WorkGroupSize.x) dst.v[d] = quantize_values[d];
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

  const uint64_t first = uint64_t(head_index) * dim;  // the head's first output value
  if (split) {
    write_partial(index, m, s, acc);
    if (!last_to_arrive(head_index)) return;
    merge_partials(head_index);
  } else {
    const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
    for (uint i = 0, w = lane; w < pairs; ++i, w += stride) {
      quantize_values[2u * w] = acc[i].x * inverse;
      quantize_values[2u * w + 1u] = acc[i].y * inverse;
    }
  }
  store_output(first);
}
