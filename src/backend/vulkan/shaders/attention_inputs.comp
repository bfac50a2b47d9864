#version 460
// The attention inputs of a batch, per (token, head): queries get QK-norm, RoPE and the query
// scale in place; keys get QK-norm and RoPE and go to their KV slot as f16; values get the
// unweighted V-norm (Gemma 4) and go to their slot as f16. Heads 0 .. n_head-1 are queries,
// then n_head_kv keys, then n_head_kv values; workgroup (t, h) = t * (n_head + 2 n_head_kv) + h.
// n_head_kv = 0 prepares the queries alone (a KV-shared layer, which writes no KV).
// Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS, 2 MAX_HEAD_DIM.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint MAX_HEAD_DIM = 512;
#include "reduce.glsl"

layout(push_constant, std430) uniform InputsParams {
  uint64_t q;             // f32 [n_tokens][n_head * head_dim], rewritten in place
  uint64_t k;             // f32 [n_tokens][n_head_kv * head_dim] (projection output)
  uint64_t v;             // f32 likewise (may equal k: V = K layers)
  uint64_t q_norm;        // f32 [head_dim]
  uint64_t k_norm;        // f32 [head_dim]
  uint64_t rope;          // f32 [n_tokens][n_rot / 2][cos, sin], computed on the host (model/rope.h)
  uint64_t slots;         // uint32 per token
  uint64_t k_cache;       // f16 [slots][n_head_kv * head_dim]
  uint64_t v_cache;
  uint head_dim;
  uint n_head;
  uint n_head_kv;
  uint n_rot;
  float query_scale;
  float eps;
  uint v_norm;            // 1: unweighted RMSNorm of V
  uint n_tokens;
} p;

shared float head[MAX_HEAD_DIM];

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
  F32Ptr src = F32Ptr(source);

  // RMSNorm over the head (weighted for Q and K, unweighted for V when v_norm).
  double squares = 0.0;
  for (uint d = lane; d < dim; d += stride) {
    precise float square = src.v[d] * src.v[d];
    squares += double(square);
  }
  const bool normed = is_query || is_key || p.v_norm != 0u;
  const float scale = rms_scale(workgroup_sum_f64(squares), dim, p.eps);
  F32Ptr weight = F32Ptr(is_query ? p.q_norm : p.k_norm);
  for (uint d = lane; d < dim; d += stride) {
    const float x = src.v[d];
    head[d] = !normed ? x : (is_query || is_key ? x * scale * weight.v[d] : x * scale);
  }
  barrier();

  // RoPE on queries and keys: pairs (i, i + n_rot/2), dims from n_rot on unchanged, fused as
  // the CPU backend (model/rope.h RopeTable::apply). Each pair belongs to one invocation, which
  // reads and writes both of its values.
  if (is_query || is_key) {
    const uint half_rot = p.n_rot / 2u;
    F32Ptr rope = F32Ptr(p.rope + uint64_t(t) * half_rot * 8u);
    for (uint i = lane; i < half_rot; i += stride) {
      const float c = rope.v[2u * i], s = rope.v[2u * i + 1u];
      const float x0 = head[i], x1 = head[i + half_rot];
      head[i] = fma(x0, c, -(x1 * s));
      head[i + half_rot] = fma(x0, s, x1 * c);
    }
  }
  barrier();

  if (is_query) {
    F32Ptr dst = F32Ptr(source);
    for (uint d = lane; d < dim; d += stride) dst.v[d] = p.query_scale == 1.0 ? head[d] : head[d] * p.query_scale;
  } else {
    const uint slot = U32Ptr(p.slots).v[t];
    U16Ptr cache = U16Ptr((is_key ? p.k_cache : p.v_cache) + (uint64_t(slot) * p.n_head_kv * dim + kv_head * dim) * 2u);
    for (uint d = lane; d < dim; d += stride) cache.v[d] = uint16_t(f32_to_f16_bits(head[d]));
  }
}
