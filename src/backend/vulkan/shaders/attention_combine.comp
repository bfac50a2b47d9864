#version 460
// Merges the split-KV partials of attention.comp (scheme 1) into the output, chunk by chunk in
// order as llama.cpp merges them (attention_reference.cpp combine_partials): the new chunk's
// product rounded, the old sum fused onto it; chunks with no visible key are skipped. One
// workgroup per query head of the one token. The output is f32, or (out_q != 0) the Q8_0
// activations of the wo product (quantize_workgroup.glsl).
// The merge is a serial chain over the chunks, so its loads are issued ahead of it: every chunk's
// maximum and sum at once into shared memory, the values kLookahead chunks at a time (one load
// latency a chunk was most of the stage with the ring full: 62 chunks on a global layer).
// Specialization constants: 0 workgroup size, 1 MAX_HEAD_DIM, 2 MAX_CHUNKS (>= n_chunks).
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
  uint64_t partials;  // f32 [n_head][n_chunks][2 + head_dim]: m, s, accumulators
  uint64_t dst;       // f32 [n_head * head_dim], unless out_q != 0
  uint64_t out_q;     // or, when not 0, the Q8_0 activations of wo: packed int8 and f32 scales
  uint64_t out_d;     //   (MatmulKernels::quantized_layout)
  uint64_t step;      // AttentionStepPtr: the layer's split (n_chunks)
  uint n_head;
  uint head_dim;
} p;

const uint kDimsPerLane = (MAX_HEAD_DIM + gl_WorkGroupSize.x - 1u) / gl_WorkGroupSize.x;
const uint kLookahead = 8;  // chunks whose values are loaded before the first of them is merged

shared float chunk_max[MAX_CHUNKS], chunk_sum[MAX_CHUNKS];

F32Ptr chunk_partial(uint h, uint c, uint n_chunks) {
  return F32Ptr(p.partials + (uint64_t(h) * n_chunks + c) * (2u + p.head_dim) * 4u);
}

void main() {
  const uint h = flat_workgroup_index();
  if (h >= p.n_head) return;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x, dim = p.head_dim;
  const uint n_chunks = AttentionStepPtr(p.step).v.n_chunks;
  for (uint c = lane; c < n_chunks; c += stride) {
    F32Ptr partial = chunk_partial(h, c, n_chunks);
    chunk_max[c] = partial.v[0];
    chunk_sum[c] = partial.v[1];
  }
  barrier();
  float m = uintBitsToFloat(0xff800000u), s = 0.0;
  float out_values[kDimsPerLane];  // dims lane, lane + stride, ...
  for (uint k = 0; k < kDimsPerLane; ++k) out_values[k] = 0.0;
  for (uint c0 = 0; c0 < n_chunks; c0 += kLookahead) {
    float values[kLookahead][kDimsPerLane];
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= n_chunks || chunk_sum[c] == 0.0) continue;
      F32Ptr partial = chunk_partial(h, c, n_chunks);
      [[unroll]] for (uint k = 0; k < kDimsPerLane; ++k) {
        const uint d = lane + k * stride;
        values[j][k] = d < dim ? partial.v[2u + d] : 0.0;
      }
    }
    [[unroll]] for (uint j = 0; j < kLookahead; ++j) {
      const uint c = c0 + j;
      if (c >= n_chunks) break;
      const float cm = chunk_max[c], cs = chunk_sum[c];
      if (cs == 0.0) continue;
      const float m_new = max(m, cm);
      const float scale_old = exp(m - m_new), scale_new = exp(cm - m_new);
      [[unroll]] for (uint k = 0; k < kDimsPerLane; ++k) {
        precise float added = values[j][k] * scale_new;
        out_values[k] = fma(out_values[k], scale_old, added);
      }
      precise float added = cs * scale_new;
      s = fma(s, scale_old, added);
      m = m_new;
    }
  }
  const float inverse = s == 0.0 ? 0.0 : div_rn(1.0, s);
  const uint first = h * dim;  // the head's first output value
  if (p.out_q != 0ul) {  // head_dim a multiple of 32: whole blocks
    for (uint k = 0, d = lane; d < dim; ++k, d += stride) quantize_values[d] = out_values[k] * inverse;
    quantize_shared_q8(dim, p.out_q + first, p.out_d + first / 32u * 4u);
    return;
  }
  F32Ptr dst = F32Ptr(p.dst + uint64_t(first) * 4u);
  for (uint k = 0, d = lane; d < dim; ++k, d += stride) dst.v[d] = out_values[k] * inverse;
}
