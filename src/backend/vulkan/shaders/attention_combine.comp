#version 460
// Merges the split-KV partials of attention_rows.comp (scheme 1) into the output, in the way
// llama.cpp merges chunks (attention_reference.cpp combine_partials): the new chunk's product
// rounded, the old sum fused onto it; chunks with no visible key are skipped. One workgroup per
// (token, query head) of the step, index t * n_head + h. The output is f32, or (out_q != 0) the
// Q8_0 activations of the wo product (quantize_workgroup.glsl).
// A merge is a serial chain over chunks, so the workgroup's groups of kGroupLanes invocations
// each merge a contiguous run of the chunks in order, and the groups' results are then merged in
// group order (with the ring full a global layer has 62 chunks of 64 keys, 124 of 32). Only the
// merge's f32 rounding differs from one chain (the chunks themselves are the GPU's, not the CPU
// backend's).
// Each group issues its loads ahead of its chain: every chunk's maximum and sum at once into
// shared memory, the values kLookahead chunks at a time.
// A (token, head)'s chain is thus n_chunks / groups merges, then one per group: the workgroup's
// size (tuning.cpp combine_workgroup) trades the two.
// Specialization constants: 0 workgroup size (a multiple of kGroupLanes), 1 MAX_HEAD_DIM,
// 2 MAX_CHUNKS (>= n_chunks).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "quantize_block.glsl"
#include "attention_step.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_HEAD_DIM = 512;
layout(constant_id = 2) const uint MAX_CHUNKS = 64;
#define QUANTIZE_CAPACITY MAX_HEAD_DIM
#include "quantize_workgroup.glsl"

layout(push_constant, std430) uniform CombineParams {
  uint64_t partials;  // f32 [n_rows][n_chunks][2 + head_dim]: m, s, accumulators
  uint64_t dst;       // f32 [n_rows * head_dim], unless out_q != 0
  uint64_t out_q;     // or, when not 0, the Q8_0 activations of wo: packed int8 and f32 scales
  uint64_t out_d;     //   (MatmulKernels::quantized_layout)
  uint64_t step;      // AttentionStepPtr: the layer's split (n_chunks)
  uint n_rows;         // the step's tokens x query heads
  uint head_dim;
} p;

const uint kGroupLanes = 64;
const uint kGroups = gl_WorkGroupSize.x / kGroupLanes;
const uint kDimsPerLane = (MAX_HEAD_DIM + kGroupLanes - 1u) / kGroupLanes;
const uint kLookahead = 8;  // chunks whose values are loaded before the first of them is merged

shared float chunk_max[SHARED_COMBINE_CHUNKS(MAX_CHUNKS)], chunk_sum[SHARED_COMBINE_CHUNKS(MAX_CHUNKS)];
shared float group_max[SHARED_COMBINE_GROUPS(kGroups)], group_sum[SHARED_COMBINE_GROUPS(kGroups)];
shared float group_values[SHARED_COMBINE_VALUES(kGroups, MAX_HEAD_DIM)];

F32Ptr chunk_partial(uint h, uint c, uint n_chunks) {
  return F32Ptr(p.partials + (uint64_t(h) * n_chunks + c) * (2u + p.head_dim) * 4u);
}

// A running merge of one group's lane: maximum, sum and the lane's dims lane, lane + kGroupLanes, ...
struct Merge {
  float m, s;
  float values[kDimsPerLane];
};

// Merges a part (maximum cm, sum cs, the lane's values) into `merge`, as llama.cpp merges a chunk.
void merge_part(inout Merge merge, float cm, float cs, const float values[kDimsPerLane]) {
  const float m_new = max(merge.m, cm);
  const float scale_old = exp(merge.m - m_new), scale_new = exp(cm - m_new);
  [[unroll]] for (uint k = 0; k < kDimsPerLane; ++k) {
    precise float added = values[k] * scale_new;
    merge.values[k] = fma(merge.values[k], scale_old, added);
  }
  precise float added = cs * scale_new;
  merge.s = fma(merge.s, scale_old, added);
  merge.m = m_new;
}

// Chunks [begin, end) merged in order by one group; `lane` is the invocation's index in it.
void merge_chunks(uint h, uint begin, uint end, uint n_chunks, uint lane, out Merge merge) {
  merge.m = uintBitsToFloat(0xff800000u);
  merge.s = 0.0;
  for (uint k = 0; k < kDimsPerLane; ++k) merge.values[k] = 0.0;
  for (uint c0 = begin; c0 < end; c0 += kLookahead) {
    float values[kLookahead][kDimsPerLane];
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= end || chunk_sum[c] == 0.0) continue;
      F32Ptr partial = chunk_partial(h, c, n_chunks);
      [[unroll]] for (uint k = 0; k < kDimsPerLane; ++k) {
        const uint d = lane + k * kGroupLanes;
        values[j][k] = d < p.head_dim ? partial.v[2u + d] : 0.0;
      }
    }
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= end) break;
      if (chunk_sum[c] != 0.0) merge_part(merge, chunk_max[c], chunk_sum[c], values[j]);
    }
  }
}

void main() {
  const uint h = flat_workgroup_index();  // (token, head): t * n_head + h
  if (h >= p.n_rows) return;
  const uint dim = p.head_dim;
  const uint n_chunks = AttentionStepPtr(p.step).v.n_chunks;
  for (uint c = gl_LocalInvocationID.x; c < n_chunks; c += gl_WorkGroupSize.x) {
    F32Ptr partial = chunk_partial(h, c, n_chunks);
    chunk_max[c] = partial.v[0];
    chunk_sum[c] = partial.v[1];
  }
  barrier();
  // Each group's run of chunks, then the groups' merges in order.
  const uint group = gl_LocalInvocationID.x / kGroupLanes, lane = gl_LocalInvocationID.x % kGroupLanes;
  const uint per_group = (n_chunks + kGroups - 1u) / kGroups;
  const uint begin = min(group * per_group, n_chunks), end = min(begin + per_group, n_chunks);
  Merge part;
  merge_chunks(h, begin, end, n_chunks, lane, part);
  if (lane == 0u) {
    group_max[group] = part.m;
    group_sum[group] = part.s;
  }
  for (uint k = 0, d = lane; d < dim; ++k, d += kGroupLanes) group_values[group * MAX_HEAD_DIM + d] = part.values[k];
  barrier();
  Merge merge;
  merge.m = uintBitsToFloat(0xff800000u);
  merge.s = 0.0;
  for (uint k = 0; k < kDimsPerLane; ++k) merge.values[k] = 0.0;
  for (uint g = 0; g < kGroups; ++g) {
    if (group_sum[g] == 0.0) continue;
    float values[kDimsPerLane];
    [[unroll]] for (uint k = 0; k < kDimsPerLane; ++k) {
      const uint d = lane + k * kGroupLanes;
      values[k] = d < dim ? group_values[g * MAX_HEAD_DIM + d] : 0.0;
    }
    merge_part(merge, group_max[g], group_sum[g], values);
  }
  // Every group now holds the whole merge; group 0 writes it.
  const float inverse = merge.s == 0.0 ? 0.0 : div_rn(1.0, merge.s);
  const uint first = h * dim;  // the token's head's first output value
  if (p.out_q != 0ul) {  // head_dim a multiple of 32: whole blocks
    if (group == 0u) {
      for (uint k = 0, d = lane; d < dim; ++k, d += kGroupLanes) quantize_values[d] = merge.values[k] * inverse;
    }
    quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  if (group != 0u) return;
  F32Ptr dst = F32Ptr(p.dst + uint64_t(first) * 4u);
  for (uint k = 0, d = lane; d < dim; ++k, d += kGroupLanes) dst.v[d] = merge.values[k] * inverse;
}
