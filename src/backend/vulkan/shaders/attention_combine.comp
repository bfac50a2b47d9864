#version 460
// Merges the split-KV partials of attention_rows.comp (scheme 1) into the output, in the way
// llama.cpp merges chunks (attention_reference.cpp combine_partials): the new chunk's product
// rounded, the old sum fused onto it; chunks with no visible key are skipped. One workgroup per
// (token, query head, slice of kSliceDims dims), index (t * n_head + h) * slices + slice: a head's
// merge is the same for every dim but its values, so at decode a head's slices load their values
// on as many multiprocessors (one workgroup a head left 16 of a Gemma 3 12B step's, reading 128 KiB
// each with the ring full). The output is f32, or (out_q != 0) the Q8_0 activations of the wo
// product (quantize_workgroup.glsl; a slice holds whole blocks).
// A merge is a serial chain over chunks, so the workgroup's groups of kSliceDims invocations
// each merge a contiguous run of the chunks in order, and the groups' results are then merged in
// group order (with the ring full a global layer has 62 chunks of 64 keys, 124 of 32). Only the
// merge's f32 rounding differs from one chain (the chunks themselves are the GPU's, not the CPU
// backend's).
// Each group issues its loads ahead of its chain: every chunk's maximum and sum at once into
// shared memory, the values kLookahead chunks at a time.
// A (token, head)'s chain is thus n_chunks / groups merges, then one per group: the workgroup's
// size (tuning.cpp combine_workgroup) trades the two.
// Specialization constants: 0 workgroup size (a multiple of kSliceDims), 1 MAX_CHUNKS (>= n_chunks).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "quantize_block.glsl"
#include "attention_step.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_CHUNKS = 64;
#define QUANTIZE_CAPACITY SHARED_COMBINE_SLICE_DIMS
#include "quantize_workgroup.glsl"
const uint kSliceDims = SHARED_COMBINE_SLICE_DIMS;

layout(push_constant, std430) uniform CombineParams {
  uint64_t partials;  // f32 [n_rows][n_chunks][2 + head_dim]: m, s, accumulators
  uint64_t dst;       // f32 [n_rows * head_dim], unless out_q != 0
  uint64_t out_q;     // or, when not 0, the Q8_0 activations of wo: packed int8 and f32 scales
  uint64_t out_d;     //   (MatmulKernels::quantized_layout)
  uint64_t step;      // AttentionStepPtr: the layer's split (n_chunks)
  uint n_rows;         // the step's tokens x query heads
  uint head_dim;
} p;

const uint kGroups = gl_WorkGroupSize.x / kSliceDims;
const uint kLookahead = 8;  // chunks whose values are loaded before the first of them is merged

shared float chunk_max[SHARED_COMBINE_CHUNKS(MAX_CHUNKS)], chunk_sum[SHARED_COMBINE_CHUNKS(MAX_CHUNKS)];
shared float group_max[SHARED_COMBINE_GROUPS(kGroups)], group_sum[SHARED_COMBINE_GROUPS(kGroups)];
shared float group_values[SHARED_COMBINE_VALUES(kGroups)];

F32Ptr chunk_partial(uint h, uint c, uint n_chunks) {
  return F32Ptr(p.partials + (uint64_t(h) * n_chunks + c) * (2u + p.head_dim) * 4u);
}

// A running merge of one lane's dim: maximum, sum and value.
struct Merge {
  float m, s, value;
};

// Merges a part (maximum cm, sum cs, the lane's value) into `merge`, as llama.cpp merges a chunk.
void merge_part(inout Merge merge, float cm, float cs, float value) {
  const float m_new = max(merge.m, cm);
  const float scale_old = exp(merge.m - m_new), scale_new = exp(cm - m_new);
  precise float added_value = value * scale_new;
  merge.value = fma(merge.value, scale_old, added_value);
  precise float added = cs * scale_new;
  merge.s = fma(merge.s, scale_old, added);
  merge.m = m_new;
}

Merge empty_merge() { return Merge(uintBitsToFloat(0xff800000u), 0.0, 0.0); }

// Chunks [begin, end) merged in order by one group for dim d (d >= head_dim: a lane past the head,
// which merges zeros).
Merge merge_chunks(uint h, uint begin, uint end, uint n_chunks, uint d) {
  Merge merge = empty_merge();
  for (uint c0 = begin; c0 < end; c0 += kLookahead) {
    float values[kLookahead];
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= end || chunk_sum[c] == 0.0) continue;
      values[j] = d < p.head_dim ? chunk_partial(h, c, n_chunks).v[2u + d] : 0.0;
    }
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= end) break;
      if (chunk_sum[c] != 0.0) merge_part(merge, chunk_max[c], chunk_sum[c], values[j]);
    }
  }
  return merge;
}

void main() {
  const uint dim = p.head_dim;
  const uint slices = (dim + kSliceDims - 1u) / kSliceDims;
  const uint index = flat_workgroup_index();
  const uint h = index / slices;  // (token, head): t * n_head + h
  if (h >= p.n_rows) return;
  const uint slice_begin = index % slices * kSliceDims, slice_dims = min(kSliceDims, dim - slice_begin);
  const uint n_chunks = AttentionStepPtr(p.step).v.n_chunks;
  for (uint c = gl_LocalInvocationID.x; c < n_chunks; c += gl_WorkGroupSize.x) {
    F32Ptr partial = chunk_partial(h, c, n_chunks);
    chunk_max[c] = partial.v[0];
    chunk_sum[c] = partial.v[1];
  }
  barrier();
  // Each group's run of chunks, then the groups' merges in order.
  const uint group = gl_LocalInvocationID.x / kSliceDims, lane = gl_LocalInvocationID.x % kSliceDims;
  const uint d = slice_begin + lane;
  const uint per_group = (n_chunks + kGroups - 1u) / kGroups;
  const uint begin = min(group * per_group, n_chunks), end = min(begin + per_group, n_chunks);
  const Merge part = merge_chunks(h, begin, end, n_chunks, d);
  if (lane == 0u) {
    group_max[group] = part.m;
    group_sum[group] = part.s;
  }
  group_values[group * kSliceDims + lane] = part.value;
  barrier();
  Merge merge = empty_merge();
  for (uint g = 0; g < kGroups; ++g) {
    if (group_sum[g] != 0.0) merge_part(merge, group_max[g], group_sum[g], group_values[g * kSliceDims + lane]);
  }
  // Every group now holds the whole merge; group 0 writes it.
  const float inverse = merge.s == 0.0 ? 0.0 : div_rn(1.0, merge.s);
  const uint first = h * dim + slice_begin;  // the slice's first output value
  if (p.out_q != 0ul) {  // head_dim a multiple of 32: whole blocks
    if (group == 0u) quantize_values[lane] = merge.value * inverse;
    quantize_shared_q8(slice_dims, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  if (group == 0u && lane < slice_dims) F32Ptr(p.dst + uint64_t(first) * 4u).v[lane] = merge.value * inverse;
}
