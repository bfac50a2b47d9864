#version 460
// Moves keys along RoPE (bounded positions): key = rotate(key as first written, angle of its
// total move). The host computes cos/sin of every (slot, pair) in double exactly as the CPU
// backend does (ops.cpp rope_rotate_by), so this applies the CPU's rotation to the CPU's inputs:
//   k0' = k0 c - k1 s,   k1' = k0 s + k1 c   (not fused, as the CPU).
// Before a slot's first move its current key is saved as the key as written. One workgroup per
// (listed slot, KV head). Specialization constant 0: workgroup size.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform RotateParams {
  uint64_t slots;       // uint32 [n_slots]
  uint64_t first_move;  // uint32 [n_slots]: 1 if the slot has not been moved before
  uint64_t cos_sin;     // f32 [n_slots][n_rot / 2][2]
  uint64_t k_cache;     // f16 [slots][n_head_kv * head_dim]
  uint64_t k_as_written;
  uint n_head_kv;
  uint head_dim;
  uint n_rot;
  uint n_slots;
} p;

void main() {
  const uint index = flat_workgroup_index();
  if (index >= p.n_slots * p.n_head_kv) return;  // the whole workgroup, before any barrier
  const uint i = index / p.n_head_kv, h = index % p.n_head_kv;
  const uint slot = U32Ptr(p.slots).v[i];
  const uint64_t offset = (uint64_t(slot) * p.n_head_kv * p.head_dim + h * p.head_dim) * 2u;
  U16Ptr key = U16Ptr(p.k_cache + offset);
  U16Ptr written = U16Ptr(p.k_as_written + offset);
  if (U32Ptr(p.first_move).v[i] != 0u) {
    for (uint d = gl_LocalInvocationID.x; d < p.head_dim; d += gl_WorkGroupSize.x) written.v[d] = key.v[d];
  }
  barrier();
  const uint half_rot = p.n_rot / 2u;
  F32Ptr cs = F32Ptr(p.cos_sin + uint64_t(i) * half_rot * 8u);
  for (uint d = gl_LocalInvocationID.x; d < p.head_dim; d += gl_WorkGroupSize.x) {
    float value;
    if (d >= p.n_rot) {
      value = f16_bits_to_f32(uint(written.v[d]));
    } else {
      const uint pair = d % half_rot;
      const float c = cs.v[2u * pair], s = cs.v[2u * pair + 1u];
      const float x0 = f16_bits_to_f32(uint(written.v[pair])), x1 = f16_bits_to_f32(uint(written.v[pair + half_rot]));
      precise float first = d < half_rot ? x0 * c : x0 * s;
      precise float second = d < half_rot ? x1 * s : x1 * c;
      precise float rotated = d < half_rot ? first - second : first + second;
      value = rotated;
    }
    key.v[d] = uint16_t(f32_to_f16_bits(value));
  }
}
