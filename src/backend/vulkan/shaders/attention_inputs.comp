#version 460
// The attention inputs of a batch, per (token, head): queries get QK-norm, RoPE and the query
// scale in place; keys get QK-norm and RoPE and go to their KV slot as f16; values get the
// unweighted V-norm (Gemma 4) and go to their slot as f16. Heads 0 .. n_head-1 are queries,
// then n_head_kv keys, then n_head_kv values; workgroup (t, h) = t * (n_head + 2 n_head_kv) + h.
// n_head_kv = 0 prepares the queries alone (a KV-shared layer, which writes no KV). A decoded
// token's inputs are formed by attention_rows.comp itself instead (head_inputs.glsl).
// Specialization constants: 0 workgroup size (at least 32), 1 MAX_SUBGROUPS, 2 MAX_HEAD_DIM.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint MAX_HEAD_DIM = 512;
#include "reduce.glsl"
#define HEAD_MIN_WORKGROUP 32u
#include "head_inputs.glsl"

layout(push_constant, std430) uniform InputsParams { AttentionInputs p; };

void main() {
  const uint heads = p.n_head + 2u * p.n_head_kv;
  const uint index = flat_workgroup_index();
  if (index >= p.n_tokens * heads) return;  // the whole workgroup, before any barrier
  const uint t = index / heads, h = index % heads;
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  const uint dim = p.head_dim;
  const bool is_query = h < p.n_head, is_key = !is_query && h < p.n_head + p.n_head_kv;
  const uint kv_head = is_query ? 0u : (is_key ? h - p.n_head : h - p.n_head - p.n_head_kv);
  const uint64_t source = is_query ? p.q + (uint64_t(t) * p.n_head * dim + h * dim) * 4u
                                   : (is_key ? p.k : p.v) + (uint64_t(t) * p.n_head_kv * dim + kv_head * dim) * 4u;
  const bool rotated = is_query || is_key;  // normed with weights, then RoPE
  prepare_head(source, rotated ? (is_query ? p.q_norm : p.k_norm) : 0ul, rotated || p.v_norm != 0u,
               rotated ? p.n_rot / 2u : 0u, p.rope + uint64_t(t) * (p.n_rot / 2u) * 8u, dim, p.eps);

  if (is_query) {
    F32Ptr dst = F32Ptr(source);
    for (uint d = lane; d < dim; d += stride) dst.v[d] = p.query_scale == 1.0 ? head[d] : head[d] * p.query_scale;
  } else {
    const uint slot = U32Ptr(p.slots).v[t];
    U16Ptr cache = U16Ptr((is_key ? p.k_cache : p.v_cache) + (uint64_t(slot) * p.n_head_kv * dim + kv_head * dim) * 2u);
    for (uint d = lane; d < dim; d += stride) cache.v[d] = uint16_t(f32_to_f16_bits(head[d]));
  }
}
